import { createHash } from 'node:crypto'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import type { Database, Db } from './client.ts'
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

/** Start-up's migration step: one instance at a time when several start together. */
export function migrate(database: Database): Promise<void> {
  return database.exclusively(applyMigrations)
}
