import { eq, sql, type SQL } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'
import { changedFields, recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { ApiError } from '../errors.ts'
import { BoundedMap } from '../shared/bounded-map.ts'
import { invalidField } from '../shared/validation.ts'

// How long a business's events are kept (contract section 16): the operator's
// EVENT_RETENTION_DAYS, or less where the business says so. Reads compute the bound in SQL
// from the business row (./read.ts), so a change holds for them at once on every instance;
// ingestion checks `timestamp` against a cached value (below), as cheap as a Map lookup.

export const DAY_MS = 86_400_000

/**
 * A business's retention in days, as the hot path asks for it: a cached value is trusted for
 * `ttlMs` (default 10 s) and forgotten at once when this instance changes it. Another
 * instance's change reaches this one within the TTL: until then a `timestamp` near the old
 * bound is judged by it (reads and storage follow the new one at once).
 */
export interface Retention {
  /** EVENT_RETENTION_DAYS: the longest any business keeps events. */
  readonly operatorDays: number
  /** The business's effective retention in days; synchronous on a cache hit. */
  daysFor(businessId: string): number | Promise<number>
  /** Forget the cached value (after a change). */
  forget(businessId: string): void
  /**
   * For a read of the business row made elsewhere (the key store reads it with the key, in
   * one query, so a business's first request waits for one round trip, not two): call before
   * the read, then the answer with the row's own days. A change in between makes it do
   * nothing, as for the cache's own reads.
   */
  beforeOutsideRead(): (businessId: string, ownDays: number | null) => void
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
  const cached = new BoundedMap<string, { days: number; until: number }>(options.max ?? 50_000)
  // One read per business at a time: a burst of a new business's requests would otherwise
  // queue a query each in the pool, ahead of every other business's (issue 29's flood).
  const reading = new Map<string, Promise<number>>()
  // Bumped by every change: a read that began before it may hold the old row, so it answers
  // its own callers but is not kept.
  let generation = 0

  /** The business's days from its row as read, kept unless a change came after `startedAt`. */
  function keep(startedAt: number, businessId: string, ownDays: number | null): number {
    const days = effectiveDays(ownDays, operatorDays)
    if (startedAt === generation) cached.set(businessId, { days, until: clock() + ttl })
    return days
  }

  function read(businessId: string): Promise<number> {
    const pending = reading.get(businessId)
    if (pending !== undefined) return pending
    const startedAt = generation
    const started = db
      .select({ days: businesses.eventRetentionDays })
      .from(businesses)
      .where(eq(businesses.id, businessId))
      .limit(1)
      .then(([row]) => keep(startedAt, businessId, row?.days ?? null))
      .finally(() => {
        if (reading.get(businessId) === started) reading.delete(businessId)
      })
    reading.set(businessId, started)
    return started
  }

  return {
    operatorDays,
    daysFor(businessId) {
      const hit = cached.get(businessId)
      if (hit !== undefined && clock() < hit.until) return hit.days
      return read(businessId)
    },
    forget(businessId) {
      generation++
      reading.delete(businessId)
      cached.delete(businessId)
    },
    beforeOutsideRead() {
      const startedAt = generation
      return (businessId, ownDays) => void keep(startedAt, businessId, ownDays)
    },
  }
}

/** The business's own setting, capped by the operator's (which may have been lowered since). */
export function effectiveDays(own: number | null, operatorDays: number): number {
  return own === null ? operatorDays : Math.min(own, operatorDays)
}

/**
 * The earliest `occurred_at` a read may answer for the business whose row is `businessId`,
 * computed in the statement itself: a change is seen at once, whichever instance made it.
 */
export function retentionStart(businessId: string, operatorDays: number): SQL {
  return sql`(now() - make_interval(days => least(coalesce((select ${businesses.eventRetentionDays} from ${businesses} where ${businesses.id} = ${businessId}), ${operatorDays}), ${operatorDays})))`
}

/** Checks a requested `eventRetentionDays` (1 to the operator's value, or null), naming the field. */
export function checkRetentionDays(value: unknown, operatorDays: number): number | null {
  if (value === null) return null
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > operatorDays) {
    throw invalidField(
      'eventRetentionDays',
      `must be a whole number of days from 1 to ${operatorDays} (the operator's EVENT_RETENTION_DAYS), or null for the operator's value`,
    )
  }
  return value
}

export interface BusinessSettings {
  name: string
  eventRetentionDays: number | null
}

/**
 * Changes a business's settings and records `business.updated` with each changed field, in
 * one transaction; then forgets the cached retention. A 404 for an unknown business.
 */
export async function updateBusiness(
  db: Db,
  retention: Retention,
  businessId: string,
  changes: Partial<BusinessSettings>,
  by: ChangeAuthor,
): Promise<typeof businesses.$inferSelect> {
  const updated = await db.transaction(async (tx) => {
    const [before] = await tx.select().from(businesses).where(eq(businesses.id, businessId)).for('update')
    if (!before) throw new ApiError('not_found', `No business with id ${businessId}.`)
    const next = {
      name: changes.name ?? before.name,
      eventRetentionDays: changes.eventRetentionDays === undefined ? before.eventRetentionDays : changes.eventRetentionDays,
    }
    const changed = changedFields(before, { ...before, ...next }, ['name', 'eventRetentionDays'])
    if (Object.keys(changed).length === 0) return before
    const [after] = await tx.update(businesses).set(next).where(eq(businesses.id, businessId)).returning()
    await recordChange(tx, { businessId, action: 'business.updated', by, changes: changed })
    return after!
  })
  retention.forget(businessId)
  return updated
}
