import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'
import { BoundedMap } from '../shared/bounded-map.ts'
import { DAY_MS } from './time-bounds.ts'

// How long a business's events are kept (docs/api.md, "Retention"): the operator's
// EVENT_RETENTION_DAYS, or less where the business says so; and never from before
// `eventsExpiredBefore`, where a change of the retention left it (docs/decisions.md, "A
// lowered retention is final"). Reads take the bound from the business row read for each
// list (`readableSince`), so a change holds for them at once on every instance; maintenance
// deletes by the same bound (./maintenance.ts); ingestion checks `timestamp` against a
// cached value (below), as cheap as a Map lookup. The row is on the service's database,
// the events may be on another (docs/scaling.md, "A database for events"): the bound
// travels into the event store's statements as a value.

/** What the business keeps: its effective days, and the instant before which its events are gone for good. */
export interface Kept {
  days: number
  /** Milliseconds since the epoch; null: nothing expired beyond what `days` says. */
  expiredBefore: number | null
}

/** The business row's columns its retention is made of. */
export type RetentionColumns = Pick<typeof businesses.$inferSelect, 'eventRetentionDays' | 'eventsExpiredBefore'>

/** The earliest time an event of the business may have at `now`: the later of the two bounds. */
export function keptSince(kept: Kept, now: number): number {
  const byDays = now - kept.days * DAY_MS
  return kept.expiredBefore === null ? byDays : Math.max(byDays, kept.expiredBefore)
}

/**
 * A business's retention in days, as the hot path asks for it: a cached value is trusted for
 * `ttlMs` (default 10 s) and forgotten at once when this instance changes it. Another
 * instance's change reaches this one within the TTL: until then a `timestamp` near the old
 * bound is judged by it (reads and storage follow the new one at once).
 */
export interface Retention {
  /** EVENT_RETENTION_DAYS: the longest any business keeps events. */
  readonly operatorDays: number
  /** What the business keeps: the cached value while fresh, else a read of its row. */
  keptFor(businessId: string): Promise<Kept>
  /**
   * The earliest event time a read may answer for the business at `now`, from its row read
   * now (never the cache): a list follows a change at once, whichever instance made it.
   */
  readableSince(businessId: string, now?: number): Promise<Date>
  /** Forget the cached value (after a change). */
  forget(businessId: string): void
  /**
   * For a read of the business row made elsewhere (the key store reads it with the key, in
   * one query, so a business's first request waits for one round trip, not two): call before
   * the read, then the answer with the row's columns. A change in between makes it do
   * nothing, as for the cache's own reads.
   */
  beforeOutsideRead(): (businessId: string, row: RetentionColumns) => void
}

export interface RetentionOptions {
  ttlMs?: number
  max?: number
  /** Milliseconds for the TTL (default performance.now; tests move it). */
  clock?: () => number
}

export function createRetention(db: Db, operatorDays: number, options: RetentionOptions = {}): Retention {
  const ttl = options.ttlMs ?? 10_000
  const clock = options.clock ?? (() => performance.now())
  const cached = new BoundedMap<string, { kept: Kept; until: number }>(options.max ?? 50_000)
  // One read per business at a time: a burst of a new business's requests would otherwise
  // queue a query each in the pool, ahead of every other business's (issue 29's flood).
  const reading = new Map<string, Promise<Kept>>()
  // Bumped by every change: a read that began before it may hold the old row, so it answers
  // its own callers but is not kept.
  let generation = 0

  /** What a business row (none: an unknown business) says is kept. */
  function keptOf(row: RetentionColumns | undefined): Kept {
    return {
      days: effectiveDays(row?.eventRetentionDays ?? null, operatorDays),
      expiredBefore: row?.eventsExpiredBefore?.getTime() ?? null,
    }
  }

  /** What the business keeps, from its row as read; cached unless a change came after `startedAt`. */
  function keep(startedAt: number, businessId: string, row: RetentionColumns | undefined): Kept {
    const kept = keptOf(row)
    if (startedAt === generation) cached.set(businessId, { kept, until: clock() + ttl })
    return kept
  }

  function readRow(businessId: string): Promise<RetentionColumns | undefined> {
    return db
      .select({ eventRetentionDays: businesses.eventRetentionDays, eventsExpiredBefore: businesses.eventsExpiredBefore })
      .from(businesses)
      .where(eq(businesses.id, businessId))
      .limit(1)
      .then(([row]) => row)
  }

  function read(businessId: string): Promise<Kept> {
    const pending = reading.get(businessId)
    if (pending !== undefined) return pending
    const startedAt = generation
    const started = readRow(businessId)
      .then((row) => keep(startedAt, businessId, row))
      .finally(() => {
        if (reading.get(businessId) === started) reading.delete(businessId)
      })
    reading.set(businessId, started)
    return started
  }

  return {
    operatorDays,
    async keptFor(businessId) {
      const hit = cached.get(businessId)
      if (hit !== undefined && clock() < hit.until) return hit.kept
      return read(businessId)
    },
    async readableSince(businessId, now = Date.now()) {
      return new Date(keptSince(keptOf(await readRow(businessId)), now))
    },
    forget(businessId) {
      generation++
      reading.delete(businessId)
      cached.delete(businessId)
    },
    beforeOutsideRead() {
      const startedAt = generation
      return (businessId, row) => void keep(startedAt, businessId, row)
    },
  }
}

/** The business's own setting, capped by the operator's (which may have been lowered since). */
export function effectiveDays(own: number | null, operatorDays: number): number {
  return own === null ? operatorDays : Math.min(own, operatorDays)
}
