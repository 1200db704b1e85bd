import { openDatabase, queryRows, sql, type Database } from '../../db/client.ts'
import { migrate } from '../../db/migrate.ts'
import { causeCodes } from '../../src/errors.ts'

let shared: Promise<Database> | undefined

/**
 * The run's database: PostgreSQL when DATABASE_URL is set (CI's second pass), else an
 * in-memory PGlite. The same suite runs on both.
 */
export function testDatabase(): Promise<Database> {
  shared ??= (async () => {
    const database = await openDatabase({
      databaseUrl: process.env.DATABASE_URL || undefined,
      dataDir: 'memory://',
    })
    await migrate(database)
    return database
  })()
  return shared
}

export async function emptyAllTables(database: Database): Promise<void> {
  const tables = await queryRows<{ name: string }>(
    database.db,
    sql`select quote_ident(tablename) as name from pg_tables where schemaname = 'public'`,
  )
  if (tables.length === 0) return
  const truncate = sql.raw(`truncate ${tables.map((t) => t.name).join(', ')} restart identity cascade`)
  // Services of earlier tests still write in the background (usage and lastUsedAt flushes);
  // PostgreSQL may pick the truncate as a deadlock's victim. It only has to be run again.
  for (let attempt = 1; ; attempt++) {
    try {
      await database.db.execute(truncate)
      return
    } catch (error) {
      if (attempt >= 5 || !causeCodes(error).includes('40P01')) throw error
    }
  }
}

export async function closeTestDatabase(): Promise<void> {
  if (shared) await (await shared).close()
  shared = undefined
}
