import { queryRows, sql, type Database, type Db } from '../../db/client.ts'
import { DAY_MS, MAX_FUTURE_MS } from './time-bounds.ts'

// analytics_events is range-partitioned by occurred_at, one partition a calendar month (UTC)
// named analytics_events_YYYY_MM (docs/decisions.md, "Event partitions"). The rule lives
// here; db/migrations/0009_analytics_events_partitioned.sql, which made the first ones, is
// history that never runs again.

/** The partition holding `month` (a UTC month start): `analytics_events_YYYY_MM`. */
export function partitionName(month: Date): string {
  return `analytics_events_${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`
}

const PARTITION_NAME = /^analytics_events_(\d{4})_(\d{2})$/

function monthOf(at: number): Date {
  const d = new Date(at)
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1))
}

function nextMonth(month: Date): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1))
}

/** The partitions attached to analytics_events; `detachPending`: only those a DETACH CONCURRENTLY left half done. */
async function partitions(db: Db, detachPending = false): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'analytics_events'::regclass${detachPending ? sql` and i.inhdetachpending` : sql``}`,
  )
  return rows.map((row) => row.name)
}

/**
 * Every month from the oldest a retention keeps (now - `retentionDays`) to the month after
 * the latest accepted timestamp (now + 24 h) gets its partition, so none is ever missing
 * when an event comes, and the next month's exists a month before it is needed. A new
 * partition is made as a table and then attached: ATTACH takes a SHARE UPDATE EXCLUSIVE
 * lock on analytics_events, which inserts and reads do not wait for, where CREATE TABLE
 * ... PARTITION OF would take an ACCESS EXCLUSIVE one. There is no DEFAULT partition: its
 * rows would have to be scanned (and moved) before each new partition could be attached.
 */
export async function createPartitionsAhead(db: Db, now: number, retentionDays: number): Promise<string[]> {
  const existing = new Set(await partitions(db))
  const created: string[] = []
  const last = nextMonth(monthOf(now + MAX_FUTURE_MS))
  for (let month = monthOf(now - retentionDays * DAY_MS); month <= last; month = nextMonth(month)) {
    const name = partitionName(month)
    if (existing.has(name)) continue
    const table = sql.identifier(name)
    await db.execute(sql`create table if not exists ${table} (like analytics_events including defaults)`)
    await db.execute(
      sql`alter table analytics_events attach partition ${table}
          for values from (${sql.raw(`'${month.toISOString()}'`)}) to (${sql.raw(`'${nextMonth(month).toISOString()}'`)})`,
    )
    created.push(name)
  }
  return created
}

/**
 * Partitions whose every event is past the operator's retention leave whole: on PostgreSQL
 * detached CONCURRENTLY (no lock that inserts or reads wait for) and then dropped; a detach
 * left pending by a run that failed half way is finished first. PGlite has one connection,
 * which nothing else holds while this runs: a plain DROP.
 */
export async function dropExpiredPartitions(db: Db, engine: Database['engine'], now: number, retentionDays: number): Promise<string[]> {
  const cutoff = now - retentionDays * DAY_MS
  const dropped: string[] = []
  if (engine === 'postgres') {
    for (const name of await partitions(db, true))
      await db.execute(sql`alter table analytics_events detach partition ${sql.identifier(name)} finalize`)
  }
  // A month detached by a run that failed before its DROP is a table of its own now.
  const leftovers = await queryRows<{ name: string }>(
    db,
    sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = current_schema() and c.relkind = 'r' and not c.relispartition and c.relname like 'analytics\_events\_%'`,
  )
  for (const name of [...(await partitions(db)), ...leftovers.map((row) => row.name)].sort()) {
    const match = PARTITION_NAME.exec(name)
    if (match === null) continue
    const end = nextMonth(new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1)))
    if (end.getTime() > cutoff) continue
    const table = sql.identifier(name)
    const attached = leftovers.every((row) => row.name !== name)
    if (attached && engine === 'postgres') await db.execute(sql`alter table analytics_events detach partition ${table} concurrently`)
    await db.execute(sql`drop table ${table}`)
    dropped.push(name)
  }
  return dropped
}
