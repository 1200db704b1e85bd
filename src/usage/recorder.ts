import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { createBackgroundWriter, type BackgroundWriterOptions, type BackgroundWriteStats } from '../../db/background-writes.ts'
import { HeavyHitters } from './heavy-hitters.ts'

/**
 * Usage per key, counted on the request path as one Map increment
 * and written off it: every `flushIntervalMs` one transaction adds the counts to the
 * minute, hour and day tables (db/schema/usage.ts), the refused origins and addresses and
 * the scopes' last use. Instances add to the same rows, so the tables hold their sum.
 * Counts are visible within a flush interval (5 s; the contract allows 15).
 *
 * Bounded (docs/decisions.md, "Usage under a flood"):
 * - at most `maxEntries` (key, minute) counters wait for a flush; past that, requests are
 *   counted in `stats.dropped` instead;
 * - refused origins and addresses are kept per key and hour as a heavy-hitter summary
 *   of REFUSALS_KEPT_PER_HOUR entries (src/usage/heavy-hitters.ts), all summaries together
 *   at most `maxRefusals` entries: an Origin header is the client's to invent, and a flood
 *   of made-up ones costs a summary's entries, not one each;
 * - in rows, each key and hour holds at most REFUSALS_KEPT_PER_HOUR origins and as many
 *   addresses, enforced by the statement that writes them (whatever the instances), and
 *   what is not kept is added to that hour's `key_refused_others` count;
 * - a write that fails or times out is retried in smaller batches and then dropped
 *   (db/background-writes.ts); `stats.writes` counts both.
 */
export interface UsageRecorder {
  /** A request answered 2xx; `scope` the route's, if it needs one. */
  accepted(keyId: string, scope: string | null, at: number): void
  /** A request with a known key answered with `code`. */
  refused(keyId: string, code: string, at: number): void
  /** An Origin the key's list does not allow: refused, or served (`reported`, originPolicy report). */
  origin(keyId: string, origin: string | null, reported: boolean, at: number): void
  /** A client address a private key's allowedIps do not allow: refused, or served (`reported`, ipPolicy report). */
  ip(keyId: string, address: string, reported: boolean, at: number): void
  /** The scheduled round: writes what is counted, then the retries that are due. */
  flushDue(): Promise<void>
  /** Writes what is counted and every write waiting for a retry, now. */
  flush(): Promise<void>
  /** A last flush, then nothing more (graceful shutdown). */
  close(): Promise<void>
  /** How often the app's scheduler calls `flushDue`. */
  readonly intervalMs: number
  readonly stats: UsageStats
}

export interface UsageStats {
  /** Requests (or refused origins and addresses) not counted: the memory bound was reached. */
  dropped: number
  /** Flush rounds run. */
  flushes: number
  /** The writes: rows written, failed tries, rows dropped after their last try, rows waiting. */
  readonly writes: BackgroundWriteStats
}

export interface UsageRecorderOptions {
  flushIntervalMs?: number
  /** Most (key, minute) counters waiting for a flush. */
  maxEntries?: number
  /** Most refused origins and addresses held, all keys and hours together. */
  maxRefusals?: number
  /** Retries of failed writes (db/background-writes.ts). */
  retry?: Pick<BackgroundWriterOptions, 'maxAttempts' | 'retryDelayMs' | 'maxDelayMs' | 'maxWaitingRows'>
  /** Each failed write. */
  onError?: (error: unknown) => void
  /** Rows dropped after their last try: once per run of drops. */
  onDrop?: (rows: number, error: unknown) => void
  now?: () => number
}

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000
/** An origin is counted under its first 300 characters (the longest entry a list may hold). */
const MAX_ORIGIN = 300
export const NO_ORIGIN = '(no Origin header)'
/**
 * Refused origins (and, apart, refused addresses) kept per key and hour, in memory and in
 * rows: twice the 50 the report shows, so the 50 are the most frequent of the hour's
 * hundred, not merely its first (docs/decisions.md).
 */
export const REFUSALS_KEPT_PER_HOUR = 100

/** How long each resolution is kept (docs/decisions.md): the event maintenance deletes older rows (./retention.ts). */
export const USAGE_RETENTION = { minutes: 2 * DAY, hours: 35 * DAY, days: 400 * DAY, origins: 35 * DAY } as const

/** One key's counts for one minute: the request path increments fields of this, nothing more. */
interface KeyMinute {
  readonly keyId: string
  readonly minute: number
  accepted: number
  /** Error code -> count; created on the first refusal. */
  refused: Map<string, number> | null
  /** Scope -> last use in this minute; created on the first scoped request. */
  scopes: Map<string, number> | null
}

/** Refused origins ('origin') or client addresses ('ip') of one key in one hour. */
interface RefusalSummary {
  readonly kind: RefusalKind
  readonly keyId: string
  readonly hour: number
  readonly seen: HeavyHitters
}

type RefusalKind = 'origin' | 'ip'

/** What one flush writes; a failed write is retried in halves of this list. */
type UsageRow =
  | { readonly row: 'count'; keyId: string; minute: number; outcome: string; count: number }
  | { readonly row: 'scope'; keyId: string; scope: string; at: number }
  | {
      readonly row: 'named'
      kind: RefusalKind
      keyId: string
      hour: number
      reported: boolean
      name: string
      count: number
      lastSeen: number
    }
  /** Refusals of a key and hour the summary could not name for certain. */
  | { readonly row: 'rest'; kind: RefusalKind; keyId: string; hour: number; count: number }

const REFUSAL_TABLES = {
  origin: { table: 'key_refused_origins', column: 'origin' },
  ip: { table: 'key_refused_ips', column: 'ip' },
} as const

export function createUsageRecorder(db: Db, options: UsageRecorderOptions = {}): UsageRecorder {
  const interval = options.flushIntervalMs ?? 5_000
  const maxEntries = options.maxEntries ?? 100_000
  const maxRefusals = options.maxRefusals ?? 20_000
  const now = options.now ?? Date.now
  // Each key's counter for its current minute, and the finished ones waiting for a flush.
  let current = new Map<string, KeyMinute>()
  let finished: KeyMinute[] = []
  // "kind keyId hourStart" -> that key-hour's summary; refusalEntries: their entries together.
  let refusals = new Map<string, RefusalSummary>()
  let refusalEntries = 0
  const writer = createBackgroundWriter<UsageRow>((rows) => write(rows), {
    ...options.retry,
    clock: now,
    onFailure: options.onError,
    onDrop: options.onDrop,
  })
  const stats: UsageStats = { dropped: 0, flushes: 0, writes: writer.stats }
  let flushing: Promise<void> = Promise.resolve()

  /** The key's counter for the minute of `at`, or null when the bound is reached. */
  function counterOf(keyId: string, at: number): KeyMinute | null {
    const minute = at - (at % MINUTE)
    const counter = current.get(keyId)
    if (counter !== undefined && counter.minute === minute) return counter
    // A new counter (a new key, or a known key's new minute) needs a slot under the bound.
    if (current.size + finished.length >= maxEntries) return null
    if (counter !== undefined) finished.push(counter)
    const fresh: KeyMinute = { keyId, minute, accepted: 0, refused: null, scopes: null }
    current.set(keyId, fresh)
    return fresh
  }

  function countRefusal(kind: RefusalKind, keyId: string, reported: boolean, name: string, at: number): void {
    const hour = at - (at % HOUR)
    const id = `${kind} ${keyId} ${hour}`
    let summary = refusals.get(id)
    if (summary === undefined) {
      if (refusalEntries >= maxRefusals) return void stats.dropped++
      summary = { kind, keyId, hour, seen: new HeavyHitters(REFUSALS_KEPT_PER_HOUR) }
      refusals.set(id, summary)
    }
    const size = summary.seen.size
    if (!summary.seen.add(reported ? `r${name}` : `e${name}`, at, refusalEntries < maxRefusals)) return void stats.dropped++
    refusalEntries += summary.seen.size - size
  }

  /** What is counted so far, as rows; the counters start again empty. */
  function take(): UsageRow[] {
    const rows: UsageRow[] = []
    const lastUse = new Map<string, UsageRow & { row: 'scope' }>()
    for (const counter of [...finished, ...current.values()]) {
      const { keyId, minute } = counter
      if (counter.accepted > 0) rows.push({ row: 'count', keyId, minute, outcome: 'accepted', count: counter.accepted })
      for (const [outcome, count] of counter.refused ?? []) rows.push({ row: 'count', keyId, minute, outcome, count })
      for (const [scope, at] of counter.scopes ?? []) {
        const entry = `${keyId} ${scope}`
        if ((lastUse.get(entry)?.at ?? 0) < at) lastUse.set(entry, { row: 'scope', keyId, scope, at })
      }
    }
    rows.push(...lastUse.values())
    for (const { kind, keyId, hour, seen } of refusals.values()) {
      let rest = 0
      for (const entry of seen.entries()) {
        // Only what is certain is named; what the summary inherited goes to the rest.
        rows.push({
          row: 'named',
          kind,
          keyId,
          hour,
          reported: entry.item.startsWith('r'),
          name: entry.item.slice(1),
          count: entry.count - entry.error,
          lastSeen: entry.lastSeen,
        })
        rest += entry.error
      }
      if (rest > 0) rows.push({ row: 'rest', kind, keyId, hour, count: rest })
    }
    finished = []
    current = new Map()
    refusals = new Map()
    refusalEntries = 0
    return rows
  }

  async function write(rows: readonly UsageRow[]): Promise<void> {
    const counts: { key_id: string; at: number; outcome: string; count: number }[] = []
    const scopes: { key_id: string; scope: string; last_used_at: string }[] = []
    const named: Record<RefusalKind, (UsageRow & { row: 'named' })[]> = { origin: [], ip: [] }
    const rest: Record<RefusalKind, (UsageRow & { row: 'rest' })[]> = { origin: [], ip: [] }
    for (const row of rows) {
      if (row.row === 'count') counts.push({ key_id: row.keyId, at: row.minute, outcome: row.outcome, count: row.count })
      else if (row.row === 'scope') scopes.push({ key_id: row.keyId, scope: row.scope, last_used_at: new Date(row.at).toISOString() })
      else if (row.row === 'named') named[row.kind].push(row)
      else rest[row.kind].push(row)
    }
    await db.transaction(async (tx) => {
      if (counts.length > 0) {
        const json = JSON.stringify(counts)
        // The same counts go to the three resolutions: a read at any interval is one range scan.
        // Rows in one order, so that instances adding to the same rows never deadlock.
        for (const [table, unit] of [
          ['key_usage_minutes', 'minute'],
          ['key_usage_hours', 'hour'],
          ['key_usage_days', 'day'],
        ] as const) {
          await tx.execute(sql`
            insert into ${sql.identifier(table)} (key_id, at, outcome, count)
            select key_id, date_trunc(${unit}, to_timestamp(at / 1000.0) at time zone 'UTC') at time zone 'UTC', outcome, sum(count)
            from jsonb_to_recordset(${json}::jsonb) as u(key_id uuid, at bigint, outcome text, count bigint)
            where exists (select 1 from api_keys k where k.id = u.key_id)
            group by 1, 2, 3
            order by 1, 2, 3
            on conflict (key_id, at, outcome) do update set count = ${sql.identifier(table)}.count + excluded.count`)
        }
      }
      for (const kind of ['origin', 'ip'] as const) await writeRefusals(tx as unknown as Db, kind, named[kind], rest[kind])
      if (scopes.length > 0) {
        await tx.execute(sql`
          insert into key_scope_uses (key_id, scope, last_used_at)
          select key_id, scope, last_used_at
          from jsonb_to_recordset(${JSON.stringify(scopes)}::jsonb) as s(key_id uuid, scope text, last_used_at timestamptz)
          where exists (select 1 from api_keys k where k.id = s.key_id)
          order by 1, 2
          on conflict (key_id, scope) do update set last_used_at = greatest(key_scope_uses.last_used_at, excluded.last_used_at)`)
      }
    })
  }

  /** A flush: what is counted, then the retries that are due (all of them when `everything`). */
  function round(everything: boolean): Promise<void> {
    flushing = flushing.then(async () => {
      await writer.run(take(), { everything })
      stats.flushes++
    })
    return flushing
  }

  return {
    accepted(keyId, scope, at) {
      const counter = counterOf(keyId, at)
      if (counter === null) return void stats.dropped++
      counter.accepted++
      if (scope !== null) (counter.scopes ??= new Map()).set(scope, at)
    },
    refused(keyId, code, at) {
      const counter = counterOf(keyId, at)
      if (counter === null) return void stats.dropped++
      const refused = (counter.refused ??= new Map())
      refused.set(code, (refused.get(code) ?? 0) + 1)
    },
    origin(keyId, origin, reported, at) {
      countRefusal('origin', keyId, reported, origin === null ? NO_ORIGIN : origin.slice(0, MAX_ORIGIN), at)
    },
    ip(keyId, address, reported, at) {
      countRefusal('ip', keyId, reported, address.slice(0, MAX_ORIGIN), at)
    },
    flushDue: () => round(false),
    flush: () => round(true),
    intervalMs: interval,
    async close() {
      await round(true)
      writer.abandon()
    },
    stats,
  }
}

/**
 * Adds one flush's refused origins (or addresses) to their key-hours, keeping at most
 * REFUSALS_KEPT_PER_HOUR rows per key and hour whatever the instances do:
 * 1. The key-hours' `key_refused_others` rows are upserted first, in one order: each
 *    writer then holds its key-hours' row locks until commit, so two instances never
 *    merge into the same key-hour at once (nor deadlock), and the rest is added there.
 * 2. One statement merges the flush with the stored rows of those key-hours, ranks each
 *    key-hour's origins by count, keeps the top ones (updating or inserting), deletes
 *    stored ones that fell out, and adds what fell out to the key-hour's others count.
 *    It runs after the locks, so it reads whatever the previous writer committed.
 */
async function writeRefusals(
  tx: Db,
  kind: RefusalKind,
  named: readonly (UsageRow & { row: 'named' })[],
  rest: readonly (UsageRow & { row: 'rest' })[],
): Promise<void> {
  if (named.length === 0 && rest.length === 0) return
  const hours = new Map<string, { key_id: string; hour: string; count: number }>()
  for (const row of [...named, ...rest]) {
    const id = `${row.keyId} ${row.hour}`
    const hour = hours.get(id) ?? { key_id: row.keyId, hour: new Date(row.hour).toISOString(), count: 0 }
    if (row.row === 'rest') hour.count += row.count
    hours.set(id, hour)
  }
  await tx.execute(sql`
    insert into key_refused_others (key_id, hour, kind, count)
    select key_id, hour, ${kind}, sum(count)
    from jsonb_to_recordset(${JSON.stringify([...hours.values()])}::jsonb) as h(key_id uuid, hour timestamptz, count bigint)
    where exists (select 1 from api_keys k where k.id = h.key_id)
    group by key_id, hour
    order by key_id, hour
    on conflict (key_id, hour, kind) do update set count = key_refused_others.count + excluded.count`)
  if (named.length === 0) return
  const rows = named.map((row) => ({
    key_id: row.keyId,
    hour: new Date(row.hour).toISOString(),
    reported: row.reported,
    name: row.name,
    count: row.count,
    last_seen_at: new Date(row.lastSeen).toISOString(),
  }))
  const table = sql.identifier(REFUSAL_TABLES[kind].table)
  const column = sql.identifier(REFUSAL_TABLES[kind].column)
  await tx.execute(sql`
    with batch as (
      select key_id, hour, reported, name, sum(count)::bigint as count, max(last_seen_at) as last_seen_at
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        as o(key_id uuid, hour timestamptz, reported boolean, name text, count bigint, last_seen_at timestamptz)
      where exists (select 1 from api_keys k where k.id = o.key_id)
      group by key_id, hour, reported, name
    ),
    merged as (
      select key_id, hour, reported, name, sum(count)::bigint as count, max(last_seen_at) as last_seen_at, bool_or(stored) as stored
      from (
        select r.key_id, r.hour, r.reported, r.${column} as name, r.count, r.last_seen_at, true as stored
        from ${table} r
        where (r.key_id, r.hour) in (select key_id, hour from batch)
        union all
        select key_id, hour, reported, name, count, last_seen_at, false from batch
      ) both_sides
      group by key_id, hour, reported, name
    ),
    ranked as (
      select *, row_number() over (
        partition by key_id, hour order by count desc, stored desc, last_seen_at desc, name, reported
      ) as rank
      from merged
    ),
    kept as (
      update ${table} r set count = m.count, last_seen_at = m.last_seen_at
      from ranked m
      where m.stored and m.rank <= ${REFUSALS_KEPT_PER_HOUR}
        and r.key_id = m.key_id and r.hour = m.hour and r.reported = m.reported and r.${column} = m.name
        and (r.count, r.last_seen_at) is distinct from (m.count, m.last_seen_at)
    ),
    evicted as (
      delete from ${table} r using ranked m
      where m.stored and m.rank > ${REFUSALS_KEPT_PER_HOUR}
        and r.key_id = m.key_id and r.hour = m.hour and r.reported = m.reported and r.${column} = m.name
    ),
    added as (
      insert into ${table} (key_id, ${column}, hour, reported, count, last_seen_at)
      select key_id, name, hour, reported, count, last_seen_at from ranked where not stored and rank <= ${REFUSALS_KEPT_PER_HOUR}
    )
    update key_refused_others o set count = o.count + fell.count
    from (
      select key_id, hour, sum(count)::bigint as count from ranked where rank > ${REFUSALS_KEPT_PER_HOUR} group by key_id, hour
    ) fell
    where o.key_id = fell.key_id and o.hour = fell.hour and o.kind = ${kind}`)
}
