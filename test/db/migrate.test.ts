import { describe, expect, test } from 'bun:test'
import { openDatabase, queryRows, sql } from '../../db/client.ts'
import { migrate, migrationsApplied } from '../../db/migrate.ts'
import { serviceMigrations } from '../../db/migrations.ts'
import { testDatabase } from '../support/database.ts'
import { OWN_DATABASE_TEST_TIMEOUT, scratchPostgres } from '../support/scratch-database.ts'

async function appliedMigrations(database: Awaited<ReturnType<typeof testDatabase>>) {
  const [row] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`)
  return row!.n
}

test('migrating an up-to-date database applies nothing again', async () => {
  const database = await testDatabase()
  await migrate(database)
  await migrate(database)
  expect(await appliedMigrations(database)).toBe(serviceMigrations.journal.entries.length)
})

test('a start on an up-to-date database takes no lock and opens no connection of its own', async () => {
  const database = await testDatabase()
  let exclusive = 0
  await migrate({
    ...database,
    exclusively: (task) => {
      exclusive++
      return database.exclusively(task)
    },
  })
  expect(exclusive).toBe(0)
  expect(await appliedMigrations(database)).toBe(serviceMigrations.journal.entries.length)
})

test(
  "the migrator is skipped only when the journal's last migration is recorded",
  async () => {
    // A database of its own: the test removes a record of the migrations table.
    const database = await openDatabase({ dataDir: 'memory://' })
    try {
      expect(await migrationsApplied(database.db)).toBe(false)
      await migrate(database)
      expect(await migrationsApplied(database.db)).toBe(true)
      await database.db.execute(
        sql`delete from drizzle.__drizzle_migrations where created_at = (select max(created_at) from drizzle.__drizzle_migrations)`,
      )
      expect(await migrationsApplied(database.db)).toBe(false)
    } finally {
      await database.close()
    }
  },
  OWN_DATABASE_TEST_TIMEOUT,
)

// Several instances behind a load balancer start together against one PostgreSQL; without
// the advisory lock two of three crashed on duplicate catalog rows. PGlite has a single
// owning process, so this case exists on PostgreSQL only (CI's second pass runs it).
describe.skipIf(!process.env.DATABASE_URL)('instances starting together on PostgreSQL', () => {
  test('three instances migrate one fresh database: all start, the migrations apply once', async () => {
    const scratch = await scratchPostgres('migrate')
    const instances = await Promise.all([1, 2, 3].map(() => openDatabase({ databaseUrl: scratch.url, dataDir: '' })))
    try {
      const results = await Promise.allSettled(instances.map((instance) => migrate(instance)))
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled'])
      expect(await appliedMigrations(instances[0]!)).toBe(serviceMigrations.journal.entries.length)
    } finally {
      await Promise.all(instances.map((instance) => instance.close()))
      await scratch.drop()
    }
  })
})
