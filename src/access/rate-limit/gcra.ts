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
  allowed: boolean
  /** The budget's limit (RateLimit-Limit). */
  limit: number
  /** The TAT to store: moved on when allowed, unchanged when not. */
  tat: number
  /** Requests that would still be accepted right now. */
  remaining: number
  /** Whole seconds until the budget is whole again (RateLimit-Reset). */
  resetSeconds: number
  /** Whole seconds, at least 1, until a request would be accepted (Retry-After); 0 when allowed. */
  retryAfterSeconds: number
}

export function emissionInterval(budget: Budget): number {
  return (budget.windowSeconds * 1000) / budget.limit
}

/** A verdict to fill: a fresh one, or a budget's cell to reuse (see `gcra`). */
export function blankVerdict(tat = 0): Verdict {
  return { allowed: false, limit: 0, tat, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0 }
}

/**
 * Decides one request at `now` (ms) against a stored TAT (0 or older than now: a full
 * budget), written into `into` and answered. A limiter passes the bucket's own cell, which
 * then holds the TAT to store: no object is made per request (src/access/rate-limit/limiter.ts).
 */
export function gcra(storedTat: number, now: number, budget: Budget, into: Verdict = blankVerdict()): Verdict {
  const interval = emissionInterval(budget)
  const window = budget.windowSeconds * 1000
  const base = Math.max(storedTat, now)
  const next = base + interval
  into.limit = budget.limit
  if (next - now <= window + slack(interval)) {
    into.allowed = true
    into.tat = next
    into.remaining = Math.max(0, Math.floor((window - (next - now) + slack(interval)) / interval))
    into.resetSeconds = Math.ceil((next - now) / 1000)
    into.retryAfterSeconds = 0
    return into
  }
  into.allowed = false
  into.tat = storedTat
  into.remaining = 0
  into.resetSeconds = Math.ceil((base - now) / 1000)
  into.retryAfterSeconds = Math.max(1, Math.ceil((next - window - now) / 1000))
  return into
}

/** True while a stored TAT leaves no room for one more request at `now`. */
export function exhausted(storedTat: number, now: number, budget: Budget): boolean {
  const interval = emissionInterval(budget)
  return storedTat - now > budget.windowSeconds * 1000 - interval + slack(interval)
}

/** Floating-point sums of the interval drift (3 × 20 ms is not exactly 60 ms): a thousandth of one (at most half a millisecond) is ignored. */
function slack(interval: number): number {
  return Math.min(interval / 1000, 0.5)
}
