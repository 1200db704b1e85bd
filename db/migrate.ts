import { createHash } from 'node:crypto'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import { queryRows, sql, type Database, type Db } from './client.ts'
import { eventStoreMigrations, serviceMigrations, type MigrationSet } from './migrations.ts'

/** A set's committed migrations in the shape drizzle's migrator reads from disk. */
export function embeddedMigrations(set: MigrationSet = serviceMigrations): MigrationMeta[] {
  return set.journal.entries.map((entry) => {
    const source = set.sources[entry.tag]
    if (source === undefined) {
      throw new Error(`migration ${entry.tag} is in ${set.folder}'s journal but not imported in db/migrations.ts`)
    }
    return {
      sql: source.split('--> statement-breakpoint'),
      bps: entry.breakpoints,
      folderMillis: entry.when,
      hash: createHash('sha256').update(source).digest('hex'),
    }
  })
}

/**
 * Applies a set's pending migrations, exactly as drizzle's `migrate()` does from a folder,
 * but from sources embedded in the build so the compiled executable needs no files beside it.
 */
export async function applyMigrations(db: Db, set: MigrationSet = serviceMigrations): Promise<void> {
  const internals = db as unknown as {
    dialect: { migrate(m: MigrationMeta[], session: unknown, config: object): Promise<void> }
    session: unknown
  }
  await internals.dialect.migrate(embeddedMigrations(set), internals.session, {
    migrationsFolder: '(embedded)',
    migrationsTable: set.table,
  })
}

/**
 * True when the database holds the set's last migration, by drizzle's own rule (it applies
 * each migration newer than the newest it recorded): then there is nothing to apply.
 */
export async function migrationsApplied(db: Db, set: MigrationSet = serviceMigrations): Promise<boolean> {
  const last = set.journal.entries.at(-1)
  if (last === undefined) return true
  const [table] = await queryRows<{ present: boolean }>(db, sql`select to_regclass(${`drizzle.${set.table}`}) is not null as present`)
  if (!table?.present) return false
  const [newest] = await queryRows<{ applied: boolean }>(
    db,
    sql`select coalesce(max(created_at) >= ${last.when}, false) as applied from ${sql.identifier('drizzle')}.${sql.identifier(set.table)}`,
  )
  return newest?.applied === true
}

/**
 * Start-up's migration step: the service's migrations on `database`, then the event
 * store's on `events`, the same database unless EVENTS_DATABASE_URL gives it one of its own
 * (docs/scaling.md, "A database for events"). One instance at a time when several start
 * together; a start on an up-to-date database (every restart) only reads the newest
 * migration recorded, with no lock and no connection of its own.
 */
export async function migrate(database: Database, events: Database = database): Promise<void> {
  for (const [target, set] of [
    [database, serviceMigrations],
    [events, eventStoreMigrations],
  ] as const) {
    if (await migrationsApplied(target.db, set)) continue
    await target.exclusively((db) => applyMigrations(db, set))
  }
}
