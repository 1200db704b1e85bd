import { sql } from 'drizzle-orm'
import { queryRows, type Database } from '../../db/client.ts'
import { testDatabase, testEventsDatabase } from './database.ts'

export interface TableState {
  rows: number
  /** md5 of the rows as text, in a fixed order: an update shows as well as an insert. */
  digest: string
}

/**
 * Request counters, not records: a refused request of a known key is counted there by
 * design, off the request path, whenever the recorder flushes.
 */
const COUNTERS = new Set([
  'key_usage_minutes',
  'key_usage_hours',
  'key_usage_days',
  'key_refused_origins',
  'key_refused_ips',
  'key_refused_others',
  'key_scope_uses',
])

/**
 * Every table of the public schema (read from the catalogue, so a new table is counted
 * the day it lands): its row count and a digest of its rows. Two equal snapshots mean
 * nothing was inserted, changed or deleted, `api_keys.last_used_at` included.
 */
export async function storedState(): Promise<Record<string, TableState>> {
  const state = await databaseState(await testDatabase())
  // The event store apart (EVENTS_DATABASE_URL): its tables too, named apart from the
  // service's database's own (which keeps the store's tables from before, empty).
  const events = await testEventsDatabase()
  if (events === (await testDatabase())) return state
  for (const [name, table] of Object.entries(await databaseState(events))) state[`events:${name}`] = table
  return state
}

/** The tables are the migrations', applied once per run: each database's catalogue is read once. */
const tablesOf = new WeakMap<Database, { name: string }[]>()

async function databaseState(database: Database): Promise<Record<string, TableState>> {
  const { db } = database
  let tables = tablesOf.get(database)
  if (tables === undefined) {
    tables = (
      await queryRows<{ name: string }>(db, sql`select tablename as name from pg_tables where schemaname = 'public' order by tablename`)
    ).filter(({ name }) => !COUNTERS.has(name))
    tablesOf.set(database, tables)
  }
  const counts = sql.join(
    tables.map(
      ({ name }) =>
        sql`select ${name} as name, count(*)::int as rows, coalesce(md5(string_agg(r::text, ',' order by r::text)), '') as digest
            from ${sql.identifier(name)} as r`,
    ),
    sql` union all `,
  )
  const rows = await queryRows<{ name: string } & TableState>(db, counts)
  return Object.fromEntries(rows.map(({ name, rows, digest }) => [name, { rows: Number(rows), digest }]))
}
