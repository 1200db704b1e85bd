import { and, desc, eq, gt, lt } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { signInFailures } from '../../db/schema/index.ts'

export interface SignInLimits {
  /** Failed sign-ins allowed per email within the window. */
  perEmail: number
  /** Failed sign-ins allowed per client address within the window (offices share one). */
  perIp: number
  windowMs: number
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = { perEmail: 5, perIp: 20, windowMs: 15 * 60 * 1000 }

export type ThrottleDecision = { ok: true } | { ok: false; by: 'email' | 'ip'; retryAfterSeconds: number }

/**
 * Counts failed sign-ins in the database, so that every instance sees them: a guesser
 * spread over several instances behind a load balancer still meets the limit. Costs a
 * couple of indexed queries per sign-in, which is nothing next to the password hash.
 */
export function createSignInThrottle(db: Db, limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS) {
  /** When the count for `subject` falls below `limit` again, or null if it already is. */
  async function blockedUntil(subject: 'email' | 'ip', value: string, limit: number, now: Date): Promise<number | null> {
    const column = subject === 'email' ? signInFailures.email : signInFailures.ip
    const recent = await db
      .select({ failedAt: signInFailures.failedAt })
      .from(signInFailures)
      .where(and(eq(column, value), gt(signInFailures.failedAt, new Date(now.getTime() - limits.windowMs))))
      .orderBy(desc(signInFailures.failedAt))
      .limit(limit)
    // The limit-th most recent failure is the one whose ageing out lets the next attempt in.
    if (recent.length < limit) return null
    return recent[limit - 1]!.failedAt.getTime() + limits.windowMs
  }

  return {
    limits,

    async check(email: string, ip: string, now = new Date()): Promise<ThrottleDecision> {
      for (const [by, value, limit] of [['email', email, limits.perEmail], ['ip', ip, limits.perIp]] as const) {
        const until = await blockedUntil(by, value, limit, now)
        if (until !== null) return { ok: false, by, retryAfterSeconds: Math.max(1, Math.ceil((until - now.getTime()) / 1000)) }
      }
      return { ok: true }
    },

    async recordFailure(email: string, ip: string, now = new Date()): Promise<void> {
      await db.insert(signInFailures).values({ email, ip, failedAt: now })
      await db.delete(signInFailures).where(lt(signInFailures.failedAt, new Date(now.getTime() - limits.windowMs)))
    },

    /** A successful sign-in forgives that email's failures (not the address's). */
    async forgiveEmail(email: string): Promise<void> {
      await db.delete(signInFailures).where(eq(signInFailures.email, email))
    },
  }
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>
