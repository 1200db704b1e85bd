import type { Database } from '../../db/client.ts'

let shared: Promise<Database> | undefined

/**
 * The run's database: PostgreSQL when DATABASE_URL is set (CI's second pass), else an
 * in-memory PGlite. The same suite runs on both. Opened on first use, so files that never
 * touch it (unit tests) never pay for it. Parallel workers (`bun test --parallel`) each
 * get a PostgreSQL database of their own, named after the worker, so one worker's
 * truncate never meets another's test.
 */
export function testDatabase(): Promise<Database> {
  shared ??= (async () => {
    const { openDatabase } = await import('../../db/client.ts')
    const { migrate } = await import('../../db/migrate.ts')
    const databaseUrl = process.env.DATABASE_URL ? await workerDatabase(process.env.DATABASE_URL) : undefined
    const database = await openDatabase({ databaseUrl, dataDir: 'memory://' })
    await migrate(database)
    // Another file of this worker may have left rows behind; a fresh PGlite has none.
    if (databaseUrl) await emptyAllTables(database)
    return database
  })()
  return shared
}

/** The database opened by this file's tests so far, if any (the preload empties it before each test). */
export function openedTestDatabase(): Promise<Database> | undefined {
  return shared
}

/** The worker's own database beside DATABASE_URL's, created on first use; DATABASE_URL itself outside --parallel. */
async function workerDatabase(url: string): Promise<string> {
  const worker = process.env.BUN_TEST_WORKER_ID
  if (!worker) return url
  const own = new URL(url)
  const name = `${own.pathname.slice(1) || 'postgres'}_worker${worker}`
  own.pathname = `/${name}`
  const { default: postgres } = await import('postgres')
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database "${name}"`)
  } catch (error) {
    // 42P04: it exists, made by an earlier file of this worker (or a worker before).
    if ((error as { code?: string }).code !== '42P04') throw error
  } finally {
    await admin.end({ timeout: 5 })
  }
  return own.toString()
}

export async function emptyAllTables(database: Database): Promise<void> {
  const { queryRows, sql } = await import('../../db/client.ts')
  const { causeCodes } = await import('../../src/errors.ts')
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
