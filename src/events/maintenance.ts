import { queryRows, sql, type Database, type Db } from '../../db/client.ts'
import { exclusively, type Scheduler } from '../background/scheduler.ts'
import { expiredUsage } from '../usage/pruning.ts'
import { expiredErasures } from './erasure.ts'
import { createPartitionsAhead, dropExpiredPartitions } from './partitions.ts'
import { keptSince, type Kept } from './retention.ts'
import { DAY_MS } from './time-bounds.ts'

// The event store's upkeep (docs/api.md, "Retention"; docs/decisions.md, "Event partitions"):
// monthly partitions of analytics_events ahead of need, whole partitions dropped past the
// operator's retention, the rows past a retention (the business's or the operator's) in
// the months still kept deleted in bounded batches, analytics_untimed_ids kept to its 24
// hours, and the usage tables and finished erasures to theirs (src/usage/pruning.ts,
// ./erasure.ts). At start-up and hourly, on the app's scheduler; with several instances,
// one at a time (its advisory lock, taken on the event store's database, skipped by the
// others). The businesses' retention and the usage tables are read and pruned on the
// service's database, which is another one when EVENTS_DATABASE_URL is set. Every
// step fails alone: it is logged and tried again at the next run, and nothing here ever
// marks the database unavailable (that is the probe's call, db/availability.ts).

const HOUR = 3_600_000
/** How long an id sent without timestamp is remembered (docs/api.md, "Events: ids and exactly-once"). */
export const UNTIMED_ID_MS = DAY_MS
const MAX_PAUSE_MS = 1_000
/** Businesses read at a time by the retention step. */
const BUSINESS_PAGE = 1_000

export interface EventMaintenanceOptions {
  /**
   * The service's database (its pool): the businesses' retention is read there, and the
   * usage tables pruned. The event store's own database unless EVENTS_DATABASE_URL is set.
   */
  serviceDb: Db
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
  /** How a pause is waited (Bun.sleep; tests record the pauses). */
  sleep?: (ms: number) => Promise<unknown>
  /** PostgreSQL: one statement's longest run, and longest wait for a lock (defaults 30 s, 2 s). */
  statementTimeoutMs?: number
  lockTimeoutMs?: number
  /** A step that failed; the next run tries it again. */
  onError?: (step: MaintenanceStep, error: unknown) => void
}

export type MaintenanceStep = 'partitions' | 'drop' | 'expired-rows' | 'untimed' | 'pruning'

/** What one run did; `skipped` when another instance ran it at the time. */
export interface MaintenanceReport {
  skipped: boolean
  created: string[]
  dropped: string[]
  /** Rows past a retention deleted one by one (in months not dropped whole). */
  deleted: number
  /** Untimed ids forgotten. */
  forgotten: number
  /** Rows of other tables past their retention deleted: usage (src/usage/pruning.ts) and finished erasures (./erasure.ts). */
  pruned: number
  failed: MaintenanceStep[]
}

/** The scheduler's name for the maintenance job, and its advisory lock's (src/background/scheduler.ts). */
export const MAINTENANCE_JOB = 'event-maintenance'

/** Maintenance of `events` on the app's scheduler: at once, then every `intervalMs`, on one instance at a time. */
export function scheduleEventMaintenance(scheduler: Scheduler, events: Database, options: EventMaintenanceOptions): void {
  scheduler.schedule(MAINTENANCE_JOB, options.intervalMs ?? HOUR, async ({ db }) => void (await maintainIn(db, events.engine, options)), {
    exclusive: true,
    database: events,
  })
}

/**
 * One maintenance run, unless another instance is running one, as the scheduler runs it
 * (tests and benches call it directly). Never rejects.
 */
export async function maintainEvents(events: Database, options: EventMaintenanceOptions): Promise<MaintenanceReport> {
  const limits = { statementTimeoutMs: options.statementTimeoutMs ?? 30_000, lockTimeoutMs: options.lockTimeoutMs ?? 2_000 }
  try {
    const outcome = await exclusively(events, MAINTENANCE_JOB, (db) => maintainIn(db, events.engine, options), limits)
    return outcome.ran ? outcome.result : { ...emptyReport(), skipped: true }
  } catch (error) {
    // The session itself could not be opened: the next run tries again.
    options.onError?.('partitions', error)
    return { ...emptyReport(), failed: ['partitions'] }
  }
}

function emptyReport(): MaintenanceReport {
  return { skipped: false, created: [], dropped: [], deleted: 0, forgotten: 0, pruned: 0, failed: [] }
}

/** The steps of one run on `db`, the event store's session holding the maintenance lock. Every step fails alone. */
async function maintainIn(db: Db, engine: Database['engine'], options: EventMaintenanceOptions): Promise<MaintenanceReport> {
  const report = emptyReport()
  const step = async (name: MaintenanceStep, task: () => Promise<void>) => {
    try {
      await task()
    } catch (error) {
      report.failed.push(name)
      options.onError?.(name, error)
    }
  }
  const now = (options.now ?? Date.now)()
  await step('partitions', async () => void report.created.push(...(await createPartitionsAhead(db, now, options.retentionDays))))
  await step('drop', async () => void report.dropped.push(...(await dropExpiredPartitions(db, engine, now, options.retentionDays))))
  await step('expired-rows', async () => {
    report.deleted += await deleteExpiredRows(db, now, options)
  })
  await step('untimed', async () => {
    report.forgotten += await forgetUntimedIds(db, now, options)
  })
  await step('pruning', async () => {
    report.pruned += await pruneExpired({ events: db, service: options.serviceDb }, now, options)
  })
  return report
}

/**
 * Every business loses the events past its retention (its own, or the operator's: a month
 * only partly past EVENT_RETENTION_DAYS is not dropped, and its older rows would otherwise
 * stay on disk for up to a month) in statements of about `batchRows` rows, each its own
 * transaction, with a pause after it: row locks only, never one held for long, and
 * ingestion's inserts pass in between. A business with nothing expired costs one index probe.
 */
export async function deleteExpiredRows(
  db: Db,
  now: number,
  options: Pick<EventMaintenanceOptions, 'serviceDb' | 'retentionDays' | 'batchRows' | 'pauseMs' | 'sleep'>,
): Promise<number> {
  const days = options.retentionDays
  let deleted = 0
  // Businesses a page at a time, in id order: memory stays bounded whatever their number.
  let after = '00000000-0000-0000-0000-000000000000'
  for (;;) {
    const page = await queryRows<ExpiringBusiness>(
      options.serviceDb,
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
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs' | 'sleep'>,
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

/** Ids sent without timestamp are remembered 24 hours (docs/api.md, "Events: ids and exactly-once"), then forgotten in batches. */
export async function forgetUntimedIds(
  db: Db,
  now: number,
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs' | 'sleep'>,
): Promise<number> {
  return deleteOlderThan(
    db,
    { table: 'analytics_untimed_ids', column: 'occurred_at', before: new Date(now - UNTIMED_ID_MS), byKey: true },
    options,
  )
}

/**
 * Usage rows (src/usage/pruning.ts, on the service's database) and finished erasures
 * (./erasure.ts, on the event store's) past their retention, table by table, in batches.
 */
export async function pruneExpired(
  on: { events: Db; service: Db },
  now: number,
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs' | 'sleep'>,
): Promise<number> {
  let pruned = 0
  for (const expired of expiredUsage(now)) pruned += await deleteOlderThan(on.service, expired, options)
  return pruned + (await deleteOlderThan(on.events, expiredErasures(now), options))
}

/**
 * The rows of a table (not analytics_events) whose `column` is before `before`, about
 * `batchRows` a statement, picked by the column's index. A plain table's rows are named by
 * their `ctid`; the event store's (`byKey`) by their primary key (business_id, id), which
 * stays one row's name on a sharded store, where a ctid is only unique within one shard.
 */
function deleteOlderThan(
  db: Db,
  { table, column, before, byKey = false }: { table: string; column: string; before: Date; byKey?: boolean },
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs' | 'sleep'>,
): Promise<number> {
  const t = sql.identifier(table)
  const c = sql.identifier(column)
  return inBatches(options, (batchRows) =>
    queryRows<{ n: number }>(
      db,
      byKey
        ? sql`with gone as (
            delete from ${t} where (business_id, id) in (
              select business_id, id from ${t} where ${c} < ${before.toISOString()}::timestamptz limit ${batchRows}::int)
            returning 1)
          select count(*)::int as n from gone`
        : sql`with gone as (
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
  options: Pick<EventMaintenanceOptions, 'batchRows' | 'pauseMs' | 'sleep'>,
  batch: (batchRows: number) => Promise<{ n: number }[]>,
): Promise<number> {
  const batchRows = options.batchRows ?? 5_000
  let total = 0
  for (;;) {
    const started = performance.now()
    const n = (await batch(batchRows))[0]?.n ?? 0
    total += n
    if (n < batchRows) return total
    await (options.sleep ?? Bun.sleep)(Math.min(MAX_PAUSE_MS, Math.max(options.pauseMs ?? 20, 9 * (performance.now() - started))))
  }
}
