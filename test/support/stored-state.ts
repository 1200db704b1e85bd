import { sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { testDatabase } from './database.ts'

export interface TableState {
  rows: number
  /** md5 of the rows as text, in a fixed order: an update shows as well as an insert. */
  digest: string
}

/**
 * Every table of the public schema (read from the catalogue, so a new table is counted
 * the day it lands): its row count and a digest of its rows. Two equal snapshots mean
 * nothing was inserted, changed or deleted, `api_keys.last_used_at` included.
 */
let tables: { name: string }[] | undefined

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

export async function storedState(): Promise<Record<string, TableState>> {
  const { db } = await testDatabase()
  // The tables are the migrations', applied once per run: read the catalogue once.
  tables ??= (
    await queryRows<{ name: string }>(db, sql`select tablename as name from pg_tables where schemaname = 'public' order by tablename`)
  ).filter(({ name }) => !COUNTERS.has(name))
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
