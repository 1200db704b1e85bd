import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'

/**
 * Usage per key (contract section 11), counted on the request path as one Map increment
 * and written off it: every `flushIntervalMs` one transaction adds the counts to the
 * minute, hour and day tables (db/schema/usage.ts), the refused origins and the scopes'
 * last use. Instances add to the same rows, so the tables hold their sum. Counts are
 * visible within a flush interval (5 s; the contract allows 15).
 *
 * Bounded: at most `maxEntries` distinct (key, minute, outcome) counts and as many
 * (key, origin, hour) counts wait for a flush; past that, new ones are dropped and counted
 * in `stats.dropped` (an Origin header is the client's to choose, so a flood of made-up
 * origins must not grow memory). A failed flush keeps its counts for the next one, within
 * the same bound.
 */
export interface UsageRecorder {
  /** A request answered 2xx; `scope` the route's, if it needs one. */
  accepted(keyId: string, scope: string | null, at: number): void
  /** A request with a known key answered with `code`. */
  refused(keyId: string, code: string, at: number): void
  /** An Origin the key's list does not allow: refused, or served (`reported`, originPolicy report). */
  origin(keyId: string, origin: string | null, reported: boolean, at: number): void
  flush(): Promise<void>
  close(): Promise<void>
  readonly stats: { dropped: number; flushes: number }
}

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000
/** An origin is counted under its first 300 characters (the longest entry a list may hold). */
const MAX_ORIGIN = 300
export const NO_ORIGIN = '(no Origin header)'

/** How long each resolution is kept (docs/decisions.md): the retention job deletes older rows. */
export const USAGE_RETENTION = { minutes: 2 * DAY, hours: 35 * DAY, days: 400 * DAY, origins: 35 * DAY } as const

interface OriginCount {
  count: number
  lastSeen: number
}

export function createUsageRecorder(
  db: Db,
  options: { flushIntervalMs?: number; maxEntries?: number; onError?: (error: unknown) => void; now?: () => number } = {},
): UsageRecorder {
  const interval = options.flushIntervalMs ?? 5_000
  const maxEntries = options.maxEntries ?? 100_000
  const now = options.now ?? Date.now
  // "keyId minuteStart outcome" -> count
  let counts = new Map<string, number>()
  // "keyId hourStart reported origin" -> count and last seen
  let origins = new Map<string, OriginCount>()
  // "keyId scope" -> last use
  let scopes = new Map<string, number>()
  const stats = { dropped: 0, flushes: 0 }
  let flushing: Promise<void> = Promise.resolve()
  let lastPrune = 0
  let closed = false

  function add(map: Map<string, number>, entry: string, n: number): void {
    const current = map.get(entry)
    if (current !== undefined) map.set(entry, current + n)
    else if (map.size < maxEntries) map.set(entry, n)
    else stats.dropped += n
  }

  function count(keyId: string, outcome: string, at: number): void {
    add(counts, `${keyId} ${at - (at % MINUTE)} ${outcome}`, 1)
  }

  const timer = setInterval(() => void flush(), interval)
  timer.unref?.()

  async function write(batch: { counts: Map<string, number>; origins: Map<string, OriginCount>; scopes: Map<string, number> }) {
    const usage = [...batch.counts].map(([entry, n]) => {
      const [keyId, minute, outcome] = entry.split(' ') as [string, string, string]
      return { key_id: keyId, at: Number(minute), outcome, count: n }
    })
    const seen = [...batch.origins].map(([entry, c]) => {
      const space1 = entry.indexOf(' ')
      const space2 = entry.indexOf(' ', space1 + 1)
      const space3 = entry.indexOf(' ', space2 + 1)
      return {
        key_id: entry.slice(0, space1),
        hour: new Date(Number(entry.slice(space1 + 1, space2))).toISOString(),
        reported: entry.slice(space2 + 1, space3) === 'r',
        origin: entry.slice(space3 + 1),
        count: c.count,
        last_seen_at: new Date(c.lastSeen).toISOString(),
      }
    })
    const used = [...batch.scopes].map(([entry, at]) => {
      const [keyId, scope] = entry.split(' ') as [string, string]
      return { key_id: keyId, scope, last_used_at: new Date(at).toISOString() }
    })
    await db.transaction(async (tx) => {
      if (usage.length > 0) {
        const rows = JSON.stringify(usage)
        // The same counts go to the three resolutions: a read at any interval is one range scan.
        for (const [table, unit] of [['key_usage_minutes', 'minute'], ['key_usage_hours', 'hour'], ['key_usage_days', 'day']] as const) {
          await tx.execute(sql`
            insert into ${sql.identifier(table)} (key_id, at, outcome, count)
            select key_id, date_trunc(${unit}, to_timestamp(at / 1000.0) at time zone 'UTC') at time zone 'UTC', outcome, sum(count)
            from jsonb_to_recordset(${rows}::jsonb) as u(key_id uuid, at bigint, outcome text, count bigint)
            where exists (select 1 from api_keys k where k.id = u.key_id)
            group by 1, 2, 3
            on conflict (key_id, at, outcome) do update set count = ${sql.identifier(table)}.count + excluded.count`)
        }
      }
      if (seen.length > 0) {
        await tx.execute(sql`
          insert into key_refused_origins (key_id, origin, hour, reported, count, last_seen_at)
          select key_id, origin, hour, reported, count, last_seen_at
          from jsonb_to_recordset(${JSON.stringify(seen)}::jsonb)
            as o(key_id uuid, origin text, hour timestamptz, reported boolean, count bigint, last_seen_at timestamptz)
          where exists (select 1 from api_keys k where k.id = o.key_id)
          on conflict (key_id, origin, hour, reported) do update
            set count = key_refused_origins.count + excluded.count,
                last_seen_at = greatest(key_refused_origins.last_seen_at, excluded.last_seen_at)`)
      }
      if (used.length > 0) {
        await tx.execute(sql`
          insert into key_scope_uses (key_id, scope, last_used_at)
          select key_id, scope, last_used_at
          from jsonb_to_recordset(${JSON.stringify(used)}::jsonb) as s(key_id uuid, scope text, last_used_at timestamptz)
          where exists (select 1 from api_keys k where k.id = s.key_id)
          on conflict (key_id, scope) do update set last_used_at = greatest(key_scope_uses.last_used_at, excluded.last_used_at)`)
      }
    })
  }

  async function prune(): Promise<void> {
    const at = now()
    const before = (ms: number) => new Date(at - ms).toISOString()
    await db.execute(sql`delete from key_usage_minutes where at < ${before(USAGE_RETENTION.minutes)}::timestamptz`)
    await db.execute(sql`delete from key_usage_hours where at < ${before(USAGE_RETENTION.hours)}::timestamptz`)
    await db.execute(sql`delete from key_usage_days where at < ${before(USAGE_RETENTION.days)}::timestamptz`)
    await db.execute(sql`delete from key_refused_origins where hour < ${before(USAGE_RETENTION.origins)}::timestamptz`)
  }

  function flush(): Promise<void> {
    flushing = flushing.then(async () => {
      const batch = { counts, origins, scopes }
      if (counts.size + origins.size + scopes.size > 0) {
        counts = new Map()
        origins = new Map()
        scopes = new Map()
        try {
          await write(batch)
          stats.flushes++
        } catch (error) {
          // Back into the maps for the next flush, within the bound.
          for (const [entry, n] of batch.counts) add(counts, entry, n)
          for (const [entry, c] of batch.origins) {
            const current = origins.get(entry)
            if (current) {
              current.count += c.count
              current.lastSeen = Math.max(current.lastSeen, c.lastSeen)
            } else if (origins.size < maxEntries) origins.set(entry, c)
            else stats.dropped += c.count
          }
          for (const [entry, at] of batch.scopes) if (!scopes.has(entry)) scopes.set(entry, at)
          options.onError?.(error)
        }
      }
      // Retention, at most hourly per instance, off the request path like the rest.
      if (!closed && now() - lastPrune >= HOUR) {
        lastPrune = now()
        await prune().catch((error: unknown) => options.onError?.(error))
      }
    })
    return flushing
  }

  return {
    accepted(keyId, scope, at) {
      count(keyId, 'accepted', at)
      if (scope !== null) {
        const entry = `${keyId} ${scope}`
        if (scopes.has(entry) || scopes.size < maxEntries) scopes.set(entry, at)
      }
    },
    refused(keyId, code, at) {
      count(keyId, code, at)
    },
    origin(keyId, origin, reported, at) {
      const name = origin === null ? NO_ORIGIN : origin.slice(0, MAX_ORIGIN)
      const entry = `${keyId} ${at - (at % HOUR)} ${reported ? 'r' : 'e'} ${name}`
      const current = origins.get(entry)
      if (current) {
        current.count++
        current.lastSeen = at
      } else if (origins.size < maxEntries) origins.set(entry, { count: 1, lastSeen: at })
      else stats.dropped++
    },
    flush,
    async close() {
      closed = true
      clearInterval(timer)
      await flush()
    },
    stats,
  }
}
