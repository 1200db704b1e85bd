import { describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { openDatabase, queryRows, sql } from '../../db/client.ts'
import { migrate } from '../../db/migrate.ts'
import { migrationJournal } from '../../db/migrations.ts'
import { testDatabase } from '../support/database.ts'

async function appliedMigrations(database: Awaited<ReturnType<typeof testDatabase>>) {
  const [row] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`)
  return row!.n
}

test('migrating an up-to-date database applies nothing again', async () => {
  const database = await testDatabase()
  await migrate(database)
  await migrate(database)
  expect(await appliedMigrations(database)).toBe(migrationJournal.entries.length)
})

// Several instances behind a load balancer start together against one PostgreSQL; without
// the advisory lock two of three crashed on duplicate catalog rows. PGlite has a single
// owning process, so this case exists on PostgreSQL only (CI's second pass runs it).
describe.skipIf(!process.env.DATABASE_URL)('instances starting together on PostgreSQL', () => {
  test('three instances migrate one fresh database: all start, the migrations apply once', async () => {
    const base = new URL(process.env.DATABASE_URL!)
    const name = `keygate_migrate_${crypto.randomUUID().slice(0, 8)}`
    const maintenanceUrl = new URL(base)
    maintenanceUrl.pathname = '/postgres'
    const maintenance = postgres(maintenanceUrl.toString(), { max: 1, onnotice: () => {} })
    await maintenance.unsafe(`create database "${name}"`)
    const url = new URL(base)
    url.pathname = `/${name}`
    const instances = await Promise.all([1, 2, 3].map(() => openDatabase({ databaseUrl: url.toString(), dataDir: '' })))
    try {
      const results = await Promise.allSettled(instances.map((instance) => migrate(instance)))
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled'])
      expect(await appliedMigrations(instances[0]!)).toBe(migrationJournal.entries.length)
    } finally {
      await Promise.all(instances.map((instance) => instance.close()))
      await maintenance.unsafe(`drop database "${name}" with (force)`)
      await maintenance.end()
    }
  })
})
