import { readdirSync, readFileSync, renameSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from '../../db/client.ts'

let shared: Promise<Database> | undefined

/**
 * The run's database: PostgreSQL when DATABASE_URL is set (CI's second pass), else an
 * in-memory PGlite. The same suite runs on both. Opened on first use, so files that never
 * touch it (unit tests) never pay for it, and kept open for the worker's later files (the
 * suite runs without isolation: under `--isolate` each file would open one of its own). Parallel workers (`bun test --parallel`) each
 * get a PostgreSQL database of their own, named after the worker, so one worker's
 * truncate never meets another's test.
 */
export function testDatabase(): Promise<Database> {
  shared ??= (async () => {
    const { openDatabase } = await import('../../db/client.ts')
    const { migrate } = await import('../../db/migrate.ts')
    const databaseUrl = process.env.DATABASE_URL ? await workerDatabase(process.env.DATABASE_URL) : undefined
    if (databaseUrl) {
      const database = await openDatabase({ databaseUrl, dataDir: 'memory://' })
      await migrate(database)
      await ensureEventPartitions(database)
      return database
    }
    const archive = await migratedArchive()
    const database = await openDatabase({ dataDir: 'memory://', fromArchive: archive ?? undefined })
    await migrate(database)
    if (archive === null) await keepArchive(database)
    // An archive made last month lacks this month's partition (src/index.ts creates it at start).
    await ensureEventPartitions(database)
    return database
  })()
  return shared
}

let sharedEvents: Promise<Database> | undefined

/**
 * The run's event store: EVENTS_DATABASE_URL's database when set (with DATABASE_URL: CI's
 * pass with the events apart, docs/scaling.md, "A database for events"), a worker's own
 * beside it as for DATABASE_URL; else the run's database itself. Tests that read or write
 * the event store's tables directly use this one.
 */
export function testEventsDatabase(): Promise<Database> {
  const url = process.env.EVENTS_DATABASE_URL
  if (!url) return testDatabase()
  sharedEvents ??= (async () => {
    const { openDatabase } = await import('../../db/client.ts')
    const { applyMigrations } = await import('../../db/migrate.ts')
    const { eventStoreMigrations } = await import('../../db/migrations.ts')
    const database = await openDatabase({ databaseUrl: await workerDatabase(url, 'events'), dataDir: 'memory://' })
    await database.exclusively((db) => applyMigrations(db, eventStoreMigrations))
    await ensureEventPartitions(database)
    return database
  })()
  return sharedEvents
}

/** The database that holds `table`: the event store's tables (db/schema/event-store.ts) are on testEventsDatabase(). */
export async function testDatabaseOf(table: string): Promise<Database> {
  const { getTableName, is } = await import('drizzle-orm')
  const { PgTable } = await import('drizzle-orm/pg-core')
  const store = await import('../../db/schema/event-store.ts')
  const inStore = Object.values(store).some((value) => is(value, PgTable) && getTableName(value) === table)
  return inStore ? testEventsDatabase() : testDatabase()
}

/** The event store's database opened so far, if it is one of its own (the preload empties it too). */
export function openedTestEventsDatabase(): Promise<Database> | undefined {
  return sharedEvents
}

/** EVENTS_DATABASE_URL as this worker's processes must use it, or undefined when the events live beside the rest. */
export function testEventsDatabaseUrl(): Promise<string | undefined> {
  const url = process.env.EVENTS_DATABASE_URL
  return url ? workerDatabase(url, 'events') : Promise.resolve(undefined)
}

/**
 * A migrated PGlite data directory, kept in the system's temp directory under the hash of
 * the migrations and the versions of Bun and PGlite: starting from it skips initdb and the migrations,
 * about a tenth of a fresh start, for every file that opens the database.
 */
function archivePath(): string {
  const hash = new Bun.CryptoHasher('sha256')
  for (const set of ['db/migrations', 'db/migrations-events']) {
    const folder = join(import.meta.dir, '../..', set)
    for (const name of readdirSync(folder, { recursive: true }).map(String).sort()) {
      if (name.endsWith('.sql') || name.endsWith('.json'))
        hash
          .update(set)
          .update(name)
          .update(readFileSync(join(folder, name)))
    }
  }
  hash.update(Bun.version).update(readFileSync(join(import.meta.dir, '../../node_modules/@electric-sql/pglite/package.json')))
  return join(tmpdir(), `keygate-test-pglite-${hash.digest('hex').slice(0, 16)}.tar`)
}

async function migratedArchive(): Promise<Blob | null> {
  const file = Bun.file(archivePath())
  return (await file.exists()) ? file : null
}

/** Writes the archive beside its final name, then renames it: a worker never reads half of one. */
async function keepArchive(database: Database): Promise<void> {
  const path = archivePath()
  const partial = `${path}.${process.pid}`
  await Bun.write(partial, await database.archive!())
  renameSync(partial, path)
}

/**
 * Every partition of analytics_events the default retention needs, as the service's
 * maintenance keeps them (a test that drops some calls this again).
 */
export async function ensureEventPartitions(database: Database): Promise<void> {
  const { createPartitionsAhead } = await import('../../src/events/partitions.ts')
  const { DEFAULT_EVENT_RETENTION_DAYS } = await import('../../src/config.ts')
  await createPartitionsAhead(database.db, Date.now(), DEFAULT_EVENT_RETENTION_DAYS)
}

/** The database opened by this file's tests so far, if any (the preload empties it before each test). */
export function openedTestDatabase(): Promise<Database> | undefined {
  return shared
}

/**
 * DATABASE_URL as this worker's tests and the processes they start must use it: the
 * worker's own database (see workerDatabase), or undefined on the embedded engine.
 */
export function testDatabaseUrl(): Promise<string | undefined> {
  const url = process.env.DATABASE_URL
  return url ? workerDatabase(url) : Promise.resolve(undefined)
}

const ownDatabases = new Map<string, Promise<string>>()

/**
 * The worker's own database beside DATABASE_URL's, made afresh on the worker's first use
 * and kept for its later files; DATABASE_URL itself outside --parallel. Afresh, not reused
 * from the last run: the tests empty tables by DELETE, and a database kept across runs
 * grew dead rows the planner counted as live (never analyzed): the catalogue-wide digests
 * of test/support/stored-state.ts went parallel, 200 ms a query instead of 10, and the
 * PostgreSQL pass took 7.5 minutes instead of 2.
 */
function workerDatabase(url: string, role = 'service'): Promise<string> {
  const worker = process.env.BUN_TEST_WORKER_ID
  if (!worker) return Promise.resolve(url)
  const known = ownDatabases.get(role)
  if (known) return known
  const made = (async () => {
    const own = new URL(url)
    const name = `${own.pathname.slice(1) || 'postgres'}_worker${worker}`
    own.pathname = `/${name}`
    const { default: postgres } = await import('postgres')
    const admin = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 })
    try {
      await admin.unsafe(`drop database if exists "${name}" with (force)`)
      await admin.unsafe(`create database "${name}"`)
    } finally {
      await admin.end({ timeout: 5 })
    }
    return own.toString()
  })()
  ownDatabases.set(role, made)
  return made
}

/** Each database's tables, read once: partitions are emptied with their table. */
const tablesOf = new WeakMap<Database, Promise<string[]>>()

/**
 * Empties every table a test left rows in (tests run on an empty database). One query asks
 * which tables hold rows, so a test that wrote nothing (most unit tests, while a file
 * before them left the database open) costs that query and no truncate.
 */
export async function emptyAllTables(database: Database): Promise<void> {
  const { queryRows, sql } = await import('../../db/client.ts')
  const { causeCodes } = await import('../../src/errors.ts')
  let tables = tablesOf.get(database)
  if (tables === undefined) {
    tables = queryRows<{ name: string }>(
      database.db,
      sql`select quote_ident(c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition`,
    ).then((rows) => rows.map((row) => row.name))
    tablesOf.set(database, tables)
  }
  const all = await tables
  if (all.length === 0) return
  const holding = await queryRows<{ name: string }>(
    database.db,
    sql.raw(all.map((name) => `select '${name.replaceAll("'", "''")}' as name where exists (select 1 from ${name})`).join(' union all ')),
  )
  if (holding.length === 0) return
  // DELETE rather than TRUNCATE: a test leaves a few rows, and TRUNCATE makes new files
  // for each table (about 180 ms a test on PGlite, 40 ms on PostgreSQL, against a few ms).
  // The replica role skips foreign-key checks and triggers, so the order does not matter.
  const empty = () =>
    database.db.transaction(async (tx) => {
      await tx.execute(sql`set local session_replication_role = replica`)
      for (const { name } of holding) await tx.execute(sql.raw(`delete from ${name}`))
    })
  // Services of earlier tests still write in the background (usage and lastUsedAt flushes);
  // PostgreSQL may pick the delete as a deadlock's victim. It only has to be run again.
  for (let attempt = 1; ; attempt++) {
    try {
      await empty()
      return
    } catch (error) {
      if (attempt >= 5 || !causeCodes(error).includes('40P01')) throw error
    }
  }
}
