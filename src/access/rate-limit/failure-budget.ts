import type { Budget } from '../../config.ts'
import { BoundedMap } from '../../shared/bounded-map.ts'

/** A budget for counting failures: `blocked` before the work, `record` after a failure. */
export interface FailureBudget {
  /** False when no failure came within the last window: then nobody can be blocked. */
  active(now: number): boolean
  /** Whole seconds the subject must wait, or null when it may go on. */
  blocked(subject: string, now: number): number | null
  record(subject: string, now: number): void
}

/** One subject's failures in two fixed windows: the one that started at `start`, and the one before. */
interface Tally {
  start: number
  current: number
  previous: number
}

/**
 * Failures per subject (a client address) within a sliding window (docs/api.md, "Rate limits"):
 * "more than `limit` within a minute" is refused until it no longer holds. The count over
 * the last window is estimated from two fixed windows (the previous one weighted by the
 * share of it still inside the sliding window), as nginx's and Cloudflare's limiters do:
 * a bucket that leaks would let a guesser that paces itself through without end.
 */
export function createFailureBudget(budget: Budget, maxSubjects = 100_000): FailureBudget {
  const window = budget.windowSeconds * 1000
  const tallies = new BoundedMap<string, Tally>(maxSubjects)
  let lastFailureAt = Number.NEGATIVE_INFINITY

  /** Moves the tally's windows forward to the one holding `now`. */
  function roll(tally: Tally, now: number): void {
    const elapsed = now - tally.start
    if (elapsed < window) return
    tally.previous = elapsed < 2 * window ? tally.current : 0
    tally.current = 0
    tally.start = now - (elapsed % window)
  }

  function estimate(tally: Tally, now: number): number {
    return tally.previous * (1 - (now - tally.start) / window) + tally.current
  }

  /** Milliseconds from `now` until the estimate falls below the limit. */
  function wait(tally: Tally, now: number): number {
    const intoWindow = now - tally.start
    if (tally.current >= budget.limit) {
      // Only the next window can bring it down, as this one's count ages.
      return window - intoWindow + window * (1 - budget.limit / tally.current)
    }
    return window * (1 - (budget.limit - tally.current) / tally.previous) - intoWindow
  }

  return {
    active: (now) => now - lastFailureAt < window,
    blocked(subject, now) {
      const tally = tallies.get(subject)
      if (tally === undefined) return null
      roll(tally, now)
      if (estimate(tally, now) < budget.limit) return null
      return Math.max(1, Math.ceil(wait(tally, now) / 1000))
    },
    record(subject, now) {
      lastFailureAt = now
      const tally = tallies.get(subject)
      if (tally === undefined) return tallies.set(subject, { start: now, current: 1, previous: 0 })
      roll(tally, now)
      tally.current++
    },
  }
}
