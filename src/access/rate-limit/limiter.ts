import type { Budget } from '../../config.ts'
import { BoundedMap } from '../../shared/bounded-map.ts'
import { emissionInterval, gcra, standing } from './gcra.ts'
import { createSharedCounters, type SharedCounters } from './redis.ts'

/** One decision of the limiter, with what the RateLimit-* headers say: a value of its own per take. */
export interface RateLimitOutcome {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetSeconds: number
  readonly retryAfterSeconds: number
}

export interface RateLimiter {
  /** Counts one request against `bucket`'s budget. Synchronous unless the shared counters must be asked. */
  take(bucket: string, budget: Budget, now: number): Promise<RateLimitOutcome>
  /** What `bucket`'s budget stands at, counting nothing (for a refusal's RateLimit-* headers); as this instance knows it. */
  peek(bucket: string, budget: Budget, now: number): RateLimitOutcome
  /** True while budgets are shared through Redis; false when counting alone. */
  sharing(): boolean
  close(): Promise<void>
}

export interface RateLimiterOptions {
  /** Shared counters (REDIS_URL); unset: this instance counts alone. */
  redisUrl?: string
  /** Stands in for the Redis counters (tests script their answers). */
  shared?: SharedCounters
  /** Most buckets remembered; the least recently used is forgotten first (a fresh budget). */
  maxBuckets?: number
  log?: (line: string) => void
}

/**
 * The budgets of docs/api.md, "Rate limits". Alone, each bucket is a GCRA cell in memory. With shared
 * counters (Redis), an instance leases budget in small slices (a twentieth of the limit)
 * and spends them locally, so most requests never wait for Redis, and the instances
 * together never accept more than the budget plus one unleased request each (the first
 * request of a bucket an instance has not seen goes through at once and is charged to the
 * shared budget with the next lease). A bucket Redis refused stays refused locally until
 * the time Redis gave. When Redis cannot be reached the instance counts alone.
 */
export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const max = options.maxBuckets ?? 100_000
  // Each bucket's theoretical arrival time (GCRA).
  const local = new BoundedMap<string, { tat: number }>(max)
  const shared = options.shared ?? (options.redisUrl ? createSharedCounters(options.redisUrl, options.log ?? console.error) : null)
  const leases = new BoundedMap<string, Lease>(max)

  function takeLocally(bucket: string, budget: Budget, now: number): RateLimitOutcome {
    const cell = local.get(bucket)
    const verdict = gcra(cell?.tat ?? 0, now, budget)
    if (cell === undefined) local.set(bucket, { tat: verdict.tat })
    else cell.tat = verdict.tat
    return verdict
  }

  /**
   * Redis is gone and this instance held a lease for the bucket: it goes on counting alone
   * from what it knew was left (its unspent tokens plus the shared remainder at the last
   * lease), not from a whole budget, which let limit + consumed through.
   */
  function fallBack(bucket: string, budget: Budget, now: number): RateLimitOutcome {
    const lease = leases.get(bucket)
    if (lease !== undefined) {
      leases.delete(bucket)
      const left = Math.min(budget.limit, Math.max(0, lease.tokens + lease.sharedRemaining))
      const tat = now + (budget.limit - left) * emissionInterval(budget)
      const cell = local.get(bucket)
      if (cell === undefined) local.set(bucket, { tat })
      else cell.tat = Math.max(cell.tat, tat)
    }
    return takeLocally(bucket, budget, now)
  }

  function spend(lease: Lease, budget: Budget): RateLimitOutcome {
    lease.tokens--
    const remaining = lease.tokens + lease.sharedRemaining
    return {
      allowed: true,
      limit: budget.limit,
      remaining,
      resetSeconds: Math.max(1, Math.ceil(((budget.limit - remaining) * emissionInterval(budget)) / 1000)),
      retryAfterSeconds: 0,
    }
  }

  function refuse(lease: Lease, budget: Budget, now: number): RateLimitOutcome {
    return {
      allowed: false,
      limit: budget.limit,
      remaining: 0,
      resetSeconds: budget.windowSeconds,
      retryAfterSeconds: Math.max(1, Math.ceil((lease.blockedUntil - now) / 1000)),
    }
  }

  function refill(bucket: string, lease: Lease, budget: Budget, now: number): Promise<boolean> {
    if (lease.refilling) return lease.refilling
    const want = Math.max(1, Math.floor(budget.limit / 20))
    const debt = lease.debt
    lease.debt = 0
    lease.refilling = shared!
      .lease(bucket, budget, want, debt)
      .then((granted) => {
        if (granted === null) {
          lease.debt += debt
          return false
        }
        lease.tokens += granted.tokens
        lease.sharedRemaining = granted.remaining
        lease.blockedUntil = granted.tokens === 0 ? now + granted.waitMs : 0
        return true
      })
      .finally(() => {
        lease.refilling = null
      })
    return lease.refilling
  }

  async function takeShared(bucket: string, lease: Lease, budget: Budget, now: number): Promise<RateLimitOutcome> {
    if (!(await refill(bucket, lease, budget, now))) return fallBack(bucket, budget, now)
    return lease.tokens > 0 ? spend(lease, budget) : refuse(lease, budget, now)
  }

  return {
    async take(bucket, budget, now) {
      if (shared === null) return takeLocally(bucket, budget, now)
      if (!shared.available()) return fallBack(bucket, budget, now)
      const lease = leases.get(bucket)
      if (lease === undefined) {
        // First sight on this instance: accept at once, charge it with the first lease.
        const fresh: Lease = { tokens: 0, sharedRemaining: budget.limit - 1, blockedUntil: 0, debt: 1, refilling: null }
        leases.set(bucket, fresh)
        void refill(bucket, fresh, budget, now)
        return { allowed: true, limit: budget.limit, remaining: budget.limit - 1, resetSeconds: 1, retryAfterSeconds: 0 }
      }
      if (lease.tokens > 0) return spend(lease, budget)
      if (lease.blockedUntil > now) return refuse(lease, budget, now)
      return takeShared(bucket, lease, budget, now)
    },
    peek(bucket, budget, now) {
      const lease = shared?.available() ? leases.get(bucket) : undefined
      if (lease !== undefined) {
        const remaining = Math.max(0, lease.tokens + lease.sharedRemaining)
        const resetSeconds = Math.max(1, Math.ceil(((budget.limit - remaining) * emissionInterval(budget)) / 1000))
        return { allowed: remaining > 0, limit: budget.limit, remaining, resetSeconds, retryAfterSeconds: 0 }
      }
      return standing(local.get(bucket)?.tat ?? 0, now, budget)
    },
    sharing: () => shared?.available() ?? false,
    async close() {
      await shared?.close()
    },
  }
}

interface Lease {
  /** Budget leased from the shared counters and not spent yet. */
  tokens: number
  /** What the shared budget had left after the last lease (for RateLimit-Remaining). */
  sharedRemaining: number
  /** Refused until then (ms), as the shared counters said. */
  blockedUntil: number
  /** Requests accepted before their budget was leased, charged with the next lease. */
  debt: number
  refilling: Promise<boolean> | null
}
