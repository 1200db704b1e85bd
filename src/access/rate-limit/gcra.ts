import type { Budget } from '../../config.ts'

/**
 * The generic cell rate algorithm (GCRA), the sliding-window limiter of contract section
 * 8, as pure arithmetic on one number per client: the theoretical arrival time (TAT).
 * Each accepted request moves the TAT on by one emission interval (window / limit); a
 * request is accepted while the TAT it would leave is at most one window ahead of now.
 * So a burst gets exactly `limit`, the budget is whole again one window after the burst,
 * and over a long run no more than limit / window pass: no fixed-window edge that admits
 * twice the limit.
 */
export interface Verdict {
  readonly allowed: boolean
  /** The budget's limit (RateLimit-Limit). */
  readonly limit: number
  /** The TAT to store: moved on when allowed, unchanged when not. */
  readonly tat: number
  /** Requests that would still be accepted right now. */
  readonly remaining: number
  /** Whole seconds until the budget is whole again (RateLimit-Reset). */
  readonly resetSeconds: number
  /** Whole seconds, at least 1, until a request would be accepted (Retry-After); 0 when allowed. */
  readonly retryAfterSeconds: number
}

export function emissionInterval(budget: Budget): number {
  return (budget.windowSeconds * 1000) / budget.limit
}

/** Decides one request at `now` (ms) against a stored TAT (0, or older than now: a full budget). */
export function gcra(storedTat: number, now: number, budget: Budget): Verdict {
  const interval = emissionInterval(budget)
  const window = budget.windowSeconds * 1000
  const base = Math.max(storedTat, now)
  const next = base + interval
  if (next - now <= window + slack(interval)) {
    return {
      allowed: true,
      limit: budget.limit,
      tat: next,
      remaining: Math.max(0, Math.floor((window - (next - now) + slack(interval)) / interval)),
      resetSeconds: Math.ceil((next - now) / 1000),
      retryAfterSeconds: 0,
    }
  }
  return {
    allowed: false,
    limit: budget.limit,
    tat: storedTat,
    remaining: 0,
    resetSeconds: Math.ceil((base - now) / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil((next - window - now) / 1000)),
  }
}

/** What a budget stands at `now`, taking nothing: for answers that refuse before the budget is met. */
export function standing(storedTat: number, now: number, budget: Budget): Verdict {
  const interval = emissionInterval(budget)
  const window = budget.windowSeconds * 1000
  const ahead = Math.max(storedTat, now) - now
  return {
    allowed: ahead + interval <= window + slack(interval),
    limit: budget.limit,
    tat: storedTat,
    remaining: Math.max(0, Math.floor((window - ahead + slack(interval)) / interval)),
    resetSeconds: Math.ceil(ahead / 1000),
    retryAfterSeconds: 0,
  }
}

/** Floating-point sums of the interval drift (3 × 20 ms is not exactly 60 ms): a thousandth of one (at most half a millisecond) is ignored. */
function slack(interval: number): number {
  return Math.min(interval / 1000, 0.5)
}
