import { openDatabase, queryRows, sql, type Database } from '../../db/client.ts'
import { migrate } from '../../db/migrate.ts'

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
  await database.db.execute(
    sql.raw(`truncate ${tables.map((t) => t.name).join(', ')} restart identity cascade`),
  )
}

export async function closeTestDatabase(): Promise<void> {
  if (shared) await (await shared).close()
  shared = undefined
}
