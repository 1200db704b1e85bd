import { queryRows, sql, type Database, type Db } from '../../db/client.ts'
import { expiredUsage } from '../usage/retention.ts'
import { expiredErasures } from './erasure.ts'
import { keptSince, type Kept } from './retention.ts'

// The event store's upkeep (contract section 16, docs/decisions.md "Event partitions"):
// monthly partitions of analytics_events ahead of need, whole partitions dropped past the
// operator's retention, the rows past a retention (the business's or the operator's) in
// the months still kept deleted in bounded batches, analytics_untimed_ids kept to its 24
// hours, and the usage tables and finished erasures to theirs (src/usage/retention.ts,
// ./erasure.ts). At start-up and hourly;
// with several instances, one at a time (an advisory lock, skipped by the others). Every
// step fails alone: it is logged and tried again at the next run, and nothing here ever
// marks the database unavailable (that is the probe's call, db/availability.ts).

const HOUR = 3_600_000
const DAY = 24 * HOUR
/** How far ahead of now a timestamp is accepted (contract section 16): its month must exist. */
const FUTURE_MS = DAY
/** How long an id sent without timestamp is remembered (contract section 16). */
export const UNTIMED_ID_MS = DAY
const LOCK = 'keygate:event-maintenance'
const MAX_PAUSE_MS = 1_000
/** Businesses read at a time by the retention step. */
const BUSINESS_PAGE = 1_000

export interface EventMaintenanceOptions {
  /** EVENT_RETENTION_DAYS: the longest any business keeps an event. */
  retentionDays: number
  /** Milliseconds since the epoch (tests move it). */
  now?: () => number
  /** Between runs (default an hour). */
  intervalMs?: number
  /** Rows one delete statement removes at most (default 5,000). */
  batchRows?: number
  /** Pause between two delete statements, so ingestion's statements pass first (default 20 ms). */
  pauseMs?: number
  /** PostgreSQL: one statement's longest run, and longest wait for a lock (defaults 30 s, 2 s). */
  statementTimeoutMs?: number
  lockTimeoutMs?: number
  /** A step that failed; the next run tries it again. */
  onError?: (step: MaintenanceStep, error: unknown) => void
}

export type MaintenanceStep = 'partitions' | 'drop' | 'retention' | 'untimed' | 'pruning'

/** What one run did; `skipped` when another instance ran it at the time. */
export interface MaintenanceReport {
  skipped: boolean
  created: string[]
  dropped: string[]
  /** Rows past a retention deleted one by one (in months not dropped whole). */
  deleted: number
  /** Untimed ids forgotten. */
  forgotten: number
  /** Rows of other tables past their retention deleted: usage (src/usage/retention.ts) and finished erasures (./erasure.ts). */
  pruned: number
  failed: MaintenanceStep[]
}

export interface EventMaintenance {
  /** One run now (after the one in progress, if any). */
  run(): Promise<MaintenanceReport>
  /** No further runs; waits for the one in progress. */
  stop(): Promise<void>
}

/** Runs maintenance at once and every `intervalMs`, each run after the previous one. */
export function startEventMaintenance(database: Database, options: EventMaintenanceOptions): EventMaintenance {
  let last: Promise<unknown> = Promise.resolve()
  let stopped = false
  const run = () => {
    const next = last.then(() => maintainEvents(database, options))
    last = next.catch(() => {})
    return next
  }
  void run()
  const timer = setInterval(() => {
    if (!stopped) void run()
  }, options.intervalMs ?? HOUR)
  timer.unref?.()
  return {
    run,
    async stop() {
      stopped = true
      clearInterval(timer)
      await last
    },
  }
}

/** One maintenance run, unless another instance is running one. Never rejects. */
export async function maintainEvents(database: Database, options: EventMaintenanceOptions): Promise<MaintenanceReport> {
  const report: MaintenanceReport = { skipped: false, created: [], dropped: [], deleted: 0, forgotten: 0, pruned: 0, failed: [] }
  const step = async (name: MaintenanceStep, task: () => Promise<void>) => {
    try {
      await task()
    } catch (error) {
      report.failed.push(name)
      options.onError?.(name, error)
    }
  }
  const limits = { statementTimeoutMs: options.statementTimeoutMs ?? 30_000, lockTimeoutMs: options.lockTimeoutMs ?? 2_000 }
  try {
    const outcome = await database.tryExclusively(
      LOCK,
      async (db) => {
        const now = (options.now ?? Date.now)()
        await step('partitions', async () => void report.created.push(...(await createPartitionsAhead(db, now, options.retentionDays))))
        await step(
          'drop',
          async () => void report.dropped.push(...(await dropExpiredPartitions(db, database.engine, now, options.retentionDays))),
        )
        await step('retention', async () => {
          report.deleted += await deleteExpiredRows(db, now, options)
        })
        await step('untimed', async () => {
          report.forgotten += await forgetUntimedIds(db, now, options)
        })
        await step('pruning', async () => {
          report.pruned += await pruneExpired(db, now, options)
        })
      },
      limits,
    )
    report.skipped = !outcome.ran
  } catch (error) {
    // The session itself could not be opened: the next run tries again.
    report.failed.push('partitions')
    options.onError?.('partitions', error)
  }
  return report
}

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

async function partitions(db: Db): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'analytics_events'::regclass`,
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
  const last = nextMonth(monthOf(now + FUTURE_MS))
  for (let month = monthOf(now - retentionDays * DAY); month <= last; month = nextMonth(month)) {
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
  const cutoff = now - retentionDays * DAY
  const dropped: string[] = []
  if (engine === 'postgres') {
    const pending = await queryRows<{ name: string }>(
      db,
      sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhparent = 'analytics_events'::regclass and i.inhdetachpending`,
    )
    for (const { name } of pending) await db.execute(sql`alter table analytics_events detach partition ${sql.identifier(name)} finalize`)
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

/**
 * Every business loses the events past its retention (its own, or the operator's: a month
 * only partly past EVENT_RETENTION_DAYS is not dropped, and its older rows would otherwise
 * stay on disk for up to a month) in statements of about `batchRows` rows, each its own
 * transaction, with a pause after it: row locks only, never one held for long, and
 * ingestion's inserts pass in between. A business with nothing expired costs one index probe.
 */
export async function deleteExpiredRows(db: Db, now: number, options: EventMaintenanceOptions): Promise<number> {
  const days = options.retentionDays
  let deleted = 0
  // Businesses a page at a time, in id order: memory stays bounded whatever their number.
  let after = '00000000-0000-0000-0000-000000000000'
  for (;;) {
    const page = await queryRows<ExpiringBusiness>(
      db,
      sql`select id, least(coalesce(event_retention_days, ${days}::int), ${days}::int) as days,
            (extract(epoch from events_expired_before) * 1000)::float8 as "expiredBefore"
          from businesses where id > ${after}::uuid order by id limit ${BUSINESS_PAGE}::int`,
    )
    for (const business of page) deleted += await deleteExpiredRowsOf(db, business, now, options)
    if (page.length < BUSINESS_PAGE) return deleted
    after = page[page.length - 1]!.id
  }
}

type ExpiringBusiness = { id: string } & Kept

async function deleteExpiredRowsOf(
  db: Db,
  business: ExpiringBusiness,
  now: number,
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs'>,
): Promise<number> {
  // The bound reads use (./retention.ts): a lowered retention's expiry holds after a raise.
  const cutoff = new Date(keptSince(business, now)).toISOString()
  // A batch is a range of the key (business_id, occurred_at, id): its edge is the time of
  // the batch's last row, found by the index, and the delete takes the range up to it, an
  // index range scan in the partitions it touches. (`where (key) in (select ... limit n)`
  // was planned as a hash join over a sequential scan of every partition, each batch.)
  // Rows sharing the edge's millisecond go in the same batch: a batch is about `batchRows`.
  return inBatches(options, (batchRows) =>
    queryRows<{ n: number }>(
      db,
      sql`with edge as (
            select occurred_at from analytics_events
            where business_id = ${business.id}::uuid and occurred_at < ${cutoff}::timestamptz
            order by occurred_at limit 1 offset ${batchRows - 1}::int),
          gone as (
            delete from analytics_events
            where business_id = ${business.id}::uuid and occurred_at < ${cutoff}::timestamptz
              and occurred_at <= coalesce((select occurred_at from edge), ${cutoff}::timestamptz)
            returning 1)
          select count(*)::int as n from gone`,
    ),
  )
}

/** Ids sent without timestamp are remembered 24 hours (contract section 16), then forgotten in batches. */
export async function forgetUntimedIds(
  db: Db,
  now: number,
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs'>,
): Promise<number> {
  return deleteOlderThan(db, { table: 'analytics_untimed_ids', column: 'occurred_at', before: new Date(now - UNTIMED_ID_MS) }, options)
}

/** Usage rows (src/usage/retention.ts) and finished erasures (./erasure.ts) past their retention, table by table, in batches. */
export async function pruneExpired(db: Db, now: number, options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs'>): Promise<number> {
  let pruned = 0
  for (const expired of [...expiredUsage(now), expiredErasures(now)]) pruned += await deleteOlderThan(db, expired, options)
  return pruned
}

/**
 * The rows of a table (not analytics_events) whose `column` is before `before`, about
 * `batchRows` a statement, picked by the column's index (a `ctid` is unique in a plain table).
 */
function deleteOlderThan(
  db: Db,
  { table, column, before }: { table: string; column: string; before: Date },
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs'>,
): Promise<number> {
  const t = sql.identifier(table)
  const c = sql.identifier(column)
  return inBatches(options, (batchRows) =>
    queryRows<{ n: number }>(
      db,
      sql`with gone as (
            delete from ${t} where ctid = any(array(
              select ctid from ${t} where ${c} < ${before.toISOString()}::timestamptz limit ${batchRows}::int))
            returning 1)
          select count(*)::int as n from gone`,
    ),
  )
}

/**
 * Runs `batch` until it deletes fewer than `batchRows`, pausing after each for `pauseMs` or
 * nine times as long as the batch took, whichever is longer: the deletes use at most a
 * tenth of one database connection's time, whatever the machine's speed. (At a quarter,
 * ingestion lost a fifth of its rate on a 2-core machine: bench/README.md, "Event store".)
 * At most a second: one batch slowed by a busy machine must not stall the rest.
 */
async function inBatches(
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs'>,
  batch: (batchRows: number) => Promise<{ n: number }[]>,
): Promise<number> {
  const batchRows = options.batchRows ?? 5_000
  let total = 0
  for (;;) {
    const started = performance.now()
    const n = (await batch(batchRows))[0]?.n ?? 0
    total += n
    if (n < batchRows) return total
    await Bun.sleep(Math.min(MAX_PAUSE_MS, Math.max(options.pauseMs ?? 20, 9 * (performance.now() - started))))
  }
}
