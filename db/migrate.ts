import { createHash } from 'node:crypto'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import { queryRows, sql, type Database, type Db } from './client.ts'
import { migrationJournal, migrationSources } from './migrations.ts'

/** The committed migrations in the shape drizzle's migrator reads from disk. */
export function embeddedMigrations(): MigrationMeta[] {
  return migrationJournal.entries.map((entry) => {
    const source = migrationSources[entry.tag]
    if (source === undefined) {
      throw new Error(`migration ${entry.tag} is in the journal but not imported in db/migrations.ts`)
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
 * Applies pending migrations, exactly as drizzle's `migrate()` does from a folder, but
 * from sources embedded in the build so the compiled executable needs no files beside it.
 */
export async function applyMigrations(db: Db): Promise<void> {
  const internals = db as unknown as {
    dialect: { migrate(m: MigrationMeta[], session: unknown, config: object): Promise<void> }
    session: unknown
  }
  await internals.dialect.migrate(embeddedMigrations(), internals.session, {
    migrationsFolder: '(embedded)',
  })
}

/**
 * True when the database holds the journal's last migration, by drizzle's own rule (it
 * applies each migration newer than the newest it recorded): then there is nothing to apply.
 */
export async function migrationsApplied(db: Db): Promise<boolean> {
  const last = migrationJournal.entries.at(-1)
  if (last === undefined) return true
  const [table] = await queryRows<{ present: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`)
  if (!table?.present) return false
  const [newest] = await queryRows<{ applied: boolean }>(
    db,
    sql`select coalesce(max(created_at) >= ${last.when}, false) as applied from drizzle.__drizzle_migrations`,
  )
  return newest?.applied === true
}

/**
 * Start-up's migration step: one instance at a time when several start together. A start
 * on an up-to-date database (every restart) only reads the newest migration recorded, with
 * no lock and no connection of its own.
 */
export async function migrate(database: Database): Promise<void> {
  if (await migrationsApplied(database.db)) return
  await database.exclusively(applyMigrations)
}
