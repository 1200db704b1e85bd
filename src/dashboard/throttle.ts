import { and, desc, eq, gt, lt, or, sql } from 'drizzle-orm'
import { queryRows, type Db } from '../../db/client.ts'
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
 * Counts sign-in attempts in the database, so that every instance sees them: a guesser
 * spread over several instances behind a load balancer still meets the limit. An attempt
 * is counted before its password is checked and forgiven when it succeeds. Costs a few
 * indexed queries per sign-in, which is nothing next to the password hash.
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

    /**
     * Counts an attempt before its password is checked, so concurrent guesses cannot all
     * pass a count taken before any of them failed. Invariant: for one email and one
     * address, at most `limit` attempts within the window hold a row. Transaction-scoped
     * advisory locks on the email and the address (always in that order, so no deadlock)
     * make the count and the insert one step across instances. Answers the reservation's
     * id, or the refusal.
     */
    async reserve(email: string, ip: string, now = new Date()): Promise<{ ok: true; id: string } | (ThrottleDecision & { ok: false })> {
      const since = new Date(now.getTime() - limits.windowMs)
      const id = await db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`sign-in email:${email}`}))`)
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`sign-in address:${ip}`}))`)
        const rows = await queryRows<{ id: string }>(
          tx as unknown as Db,
          sql`
            insert into sign_in_failures (email, ip, failed_at)
            select ${email}, ${ip}, ${now.toISOString()}::timestamptz
            where (select count(*) from sign_in_failures where email = ${email} and failed_at > ${since.toISOString()}::timestamptz) < ${limits.perEmail}
              and (select count(*) from sign_in_failures where ip = ${ip} and failed_at > ${since.toISOString()}::timestamptz) < ${limits.perIp}
            returning id`,
        )
        return rows[0]?.id ?? null
      })
      if (id !== null) return { ok: true, id }
      for (const [by, value, limit] of [
        ['email', email, limits.perEmail],
        ['ip', ip, limits.perIp],
      ] as const) {
        const until = await blockedUntil(by, value, limit, now)
        if (until !== null) return { ok: false, by, retryAfterSeconds: Math.max(1, Math.ceil((until - now.getTime()) / 1000)) }
      }
      // The blocking attempts aged out between the two statements: say so in a second.
      return { ok: false, by: 'ip', retryAfterSeconds: 1 }
    },

    /** A failed attempt keeps its reservation; rows older than the window go. */
    async settleFailure(now = new Date()): Promise<void> {
      await db.delete(signInFailures).where(lt(signInFailures.failedAt, new Date(now.getTime() - limits.windowMs)))
    },

    /** A successful sign-in gives its reservation back and forgives that email's failures (not the address's). */
    async settleSuccess(reservationId: string, email: string): Promise<void> {
      await db.delete(signInFailures).where(or(eq(signInFailures.id, reservationId), eq(signInFailures.email, email)))
    },
  }
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>
