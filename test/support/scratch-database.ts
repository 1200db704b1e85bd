import type { MigrationMeta } from 'drizzle-orm/migrator'
import postgres from 'postgres'
import { openDatabase, type Database } from '../../db/client.ts'
import { embeddedMigrations } from '../../db/migrate.ts'
import { serviceMigrations } from '../../db/migrations.ts'

/**
 * The limit of a test that opens a database of its own. A fresh embedded database starts
 * and migrates in 6-10 s on a quiet machine and took 22-28 s with the machine's load at
 * 10; the suite's 30 s limit failed such a test on a busy machine while nothing was wrong.
 */
export const OWN_DATABASE_TEST_TIMEOUT = 180_000

/**
 * A database of its own, for a test that migrates step by step: a fresh PGlite, or on
 * PostgreSQL a scratch database beside DATABASE_URL's, dropped by `dispose`.
 */
export async function scratchDatabase(prefix: string): Promise<{ database: Database; dispose: () => Promise<void> }> {
  if (!process.env.DATABASE_URL) {
    const database = await openDatabase({ dataDir: 'memory://' })
    return { database, dispose: () => database.close() }
  }
  const scratch = await scratchPostgres(prefix)
  const database = await openDatabase({ databaseUrl: scratch.url, dataDir: '' })
  return {
    database,
    async dispose() {
      await database.close()
      await scratch.drop()
    },
  }
}

/**
 * An empty database beside DATABASE_URL's on the same PostgreSQL, for a test that opens its
 * own connections to it; `drop` removes it (closing what is still connected).
 */
export async function scratchPostgres(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = new URL(process.env.DATABASE_URL!)
  const name = `${base.pathname.slice(1)}_${prefix}_${crypto.randomUUID().slice(0, 8)}`
  const maintenanceUrl = new URL(base)
  maintenanceUrl.pathname = '/postgres'
  const maintenance = postgres(maintenanceUrl.toString(), { max: 1, onnotice: () => {} })
  await maintenance.unsafe(`create database "${name}"`)
  const url = new URL(base)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      await maintenance.unsafe(`drop database "${name}" with (force)`)
      await maintenance.end()
    },
  }
}

/** Applies the committed migrations up to, not including, `tag` (which must exist). */
export async function migrateBefore(database: Database, tag: string): Promise<void> {
  const index = serviceMigrations.journal.entries.findIndex((entry) => entry.tag === tag)
  if (index < 0) throw new Error(`no migration ${tag} in the journal`)
  const internals = database.db as unknown as {
    dialect: { migrate(m: MigrationMeta[], session: unknown, config: object): Promise<void> }
    session: unknown
  }
  await internals.dialect.migrate(embeddedMigrations().slice(0, index), internals.session, { migrationsFolder: '(embedded)' })
}
