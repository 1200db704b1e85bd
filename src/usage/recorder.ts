import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'

/**
 * Usage per key (contract section 11), counted on the request path as one Map increment
 * and written off it: every `flushIntervalMs` one transaction adds the counts to the
 * minute, hour and day tables (db/schema/usage.ts), the refused origins and the scopes'
 * last use. Instances add to the same rows, so the tables hold their sum. Counts are
 * visible within a flush interval (5 s; the contract allows 15).
 *
 * Bounded: at most `maxEntries` (key, minute) counters and as many (key, origin, hour)
 * counts wait for a flush; past that, new ones are dropped and counted
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
  /** A client address a private key's allowedIps do not allow: refused, or served (`reported`, ipPolicy report). */
  ip(keyId: string, address: string, reported: boolean, at: number): void
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

interface SeenRow {
  key_id: string
  hour: string
  reported: boolean
  /** The origin, or the client address for key_refused_ips. */
  origin: string
  count: number
  last_seen_at: string
}

interface OriginCount {
  count: number
  lastSeen: number
}

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

export function createUsageRecorder(
  db: Db,
  options: { flushIntervalMs?: number; maxEntries?: number; onError?: (error: unknown) => void; now?: () => number } = {},
): UsageRecorder {
  const interval = options.flushIntervalMs ?? 5_000
  const maxEntries = options.maxEntries ?? 100_000
  const now = options.now ?? Date.now
  // Each key's counter for its current minute, and the finished ones waiting for a flush.
  let current = new Map<string, KeyMinute>()
  let finished: KeyMinute[] = []
  // "keyId hourStart flag origin" -> count and last seen. The flag says reported or not,
  // and whether the name is an origin (r/e) or a client address (ir/ie, section 14): one
  // map, so both share the bound and the keep-on-failure logic.
  let origins = new Map<string, OriginCount>()
  const stats = { dropped: 0, flushes: 0 }
  let flushing: Promise<void> = Promise.resolve()
  let lastPrune = 0
  let closed = false

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

  function count(entry: string, at: number): void {
    const seen = origins.get(entry)
    if (seen) {
      seen.count++
      seen.lastSeen = at
    } else if (origins.size < maxEntries) origins.set(entry, { count: 1, lastSeen: at })
    else stats.dropped++
  }

  const timer = setInterval(() => void flush(), interval)
  timer.unref?.()

  async function write(batch: { minutes: KeyMinute[]; origins: Map<string, OriginCount> }) {
    const usage: { key_id: string; at: number; outcome: string; count: number }[] = []
    const lastUse = new Map<string, { key_id: string; scope: string; at: number }>()
    for (const counter of batch.minutes) {
      if (counter.accepted > 0) usage.push({ key_id: counter.keyId, at: counter.minute, outcome: 'accepted', count: counter.accepted })
      for (const [code, n] of counter.refused ?? []) usage.push({ key_id: counter.keyId, at: counter.minute, outcome: code, count: n })
      for (const [scope, at] of counter.scopes ?? []) {
        const entry = `${counter.keyId} ${scope}`
        if ((lastUse.get(entry)?.at ?? 0) < at) lastUse.set(entry, { key_id: counter.keyId, scope, at })
      }
    }
    const seen: SeenRow[] = []
    const seenIps: SeenRow[] = []
    for (const [entry, c] of batch.origins) {
      const space1 = entry.indexOf(' ')
      const space2 = entry.indexOf(' ', space1 + 1)
      const space3 = entry.indexOf(' ', space2 + 1)
      const flag = entry.slice(space2 + 1, space3)
      ;(flag.startsWith('i') ? seenIps : seen).push({
        key_id: entry.slice(0, space1),
        hour: new Date(Number(entry.slice(space1 + 1, space2))).toISOString(),
        reported: flag.endsWith('r'),
        origin: entry.slice(space3 + 1),
        count: c.count,
        last_seen_at: new Date(c.lastSeen).toISOString(),
      })
    }
    const used = [...lastUse.values()].map((use) => ({
      key_id: use.key_id,
      scope: use.scope,
      last_used_at: new Date(use.at).toISOString(),
    }))
    await db.transaction(async (tx) => {
      if (usage.length > 0) {
        const rows = JSON.stringify(usage)
        // The same counts go to the three resolutions: a read at any interval is one range scan.
        for (const [table, unit] of [
          ['key_usage_minutes', 'minute'],
          ['key_usage_hours', 'hour'],
          ['key_usage_days', 'day'],
        ] as const) {
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
      if (seenIps.length > 0) {
        await tx.execute(sql`
          insert into key_refused_ips (key_id, ip, hour, reported, count, last_seen_at)
          select key_id, origin, hour, reported, count, last_seen_at
          from jsonb_to_recordset(${JSON.stringify(seenIps)}::jsonb)
            as o(key_id uuid, origin text, hour timestamptz, reported boolean, count bigint, last_seen_at timestamptz)
          where exists (select 1 from api_keys k where k.id = o.key_id)
          on conflict (key_id, ip, hour, reported) do update
            set count = key_refused_ips.count + excluded.count,
                last_seen_at = greatest(key_refused_ips.last_seen_at, excluded.last_seen_at)`)
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
    await db.execute(sql`delete from key_refused_ips where hour < ${before(USAGE_RETENTION.origins)}::timestamptz`)
  }

  function flush(): Promise<void> {
    flushing = flushing.then(async () => {
      const batch = { minutes: [...finished, ...current.values()], origins }
      if (batch.minutes.length + origins.size > 0) {
        finished = []
        current = new Map()
        origins = new Map()
        try {
          await write(batch)
          stats.flushes++
        } catch (error) {
          // Kept for the next flush, within the bound; what does not fit is counted as dropped.
          for (const counter of batch.minutes) {
            if (current.size + finished.length < maxEntries) finished.push(counter)
            else stats.dropped += counter.accepted
          }
          for (const [entry, c] of batch.origins) {
            const kept = origins.get(entry)
            if (kept) {
              kept.count += c.count
              kept.lastSeen = Math.max(kept.lastSeen, c.lastSeen)
            } else if (origins.size < maxEntries) origins.set(entry, c)
            else stats.dropped += c.count
          }
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
      count(`${keyId} ${at - (at % HOUR)} ${reported ? 'r' : 'e'} ${origin === null ? NO_ORIGIN : origin.slice(0, MAX_ORIGIN)}`, at)
    },
    ip(keyId, address, reported, at) {
      count(`${keyId} ${at - (at % HOUR)} ${reported ? 'ir' : 'ie'} ${address.slice(0, MAX_ORIGIN)}`, at)
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
