import { and, eq, lt, or } from 'drizzle-orm'
import { queryRows, sql, type Db } from '../../db/client.ts'
import { signInFailures } from '../../db/schema/index.ts'
import { createFailureBudget } from '../access/rate-limit/failure-budget.ts'
import type { Budget } from '../config.ts'
import { budgetSubject } from '../shared/client-address.ts'

/**
 * Failed sign-ins allowed within `windowMs`, counted in the database so that every instance
 * sees them (docs/decisions.md, "Sign-in under a flood"). Counted per email *and* address,
 * so that a guesser at one address never locks the owner out at another; per address, all
 * emails together; and per email from all addresses together, for a guesser spread over
 * many addresses. IPv6 addresses count per /64, like the rate limits.
 */
export interface SignInLimits {
  /** Failed sign-ins for one email from one address: a person mistyping gets this many. */
  perEmailAndAddress: number
  /** Failed sign-ins from one address, whatever the emails (offices share one). */
  perAddress: number
  /** Failed sign-ins for one email from all addresses together. */
  perEmail: number
  windowMs: number
  /**
   * Attempts (not failures) each instance lets reach the database, counted in memory
   * before any transaction or lock: a flood is answered 429 from here.
   */
  flood: { perAddress: Budget; perEmailAndAddress: Budget; perEmail: Budget }
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = {
  perEmailAndAddress: 5,
  perAddress: 20,
  perEmail: 30,
  windowMs: 15 * 60 * 1000,
  flood: {
    perAddress: { limit: 30, windowSeconds: 60 },
    perEmailAndAddress: { limit: 10, windowSeconds: 60 },
    perEmail: { limit: 60, windowSeconds: 60 },
  },
}

/** What refused an attempt: this email from this address, this email anywhere, this address, or a concurrent attempt. */
export type ThrottledBy = 'email-address' | 'email' | 'address' | 'busy'

/** A refusal names what was counted: attempts (in memory, a flood) or failed sign-ins (the database). */
export type ThrottleDecision = { ok: true } | { ok: false; by: ThrottledBy; counted: 'attempts' | 'failures'; retryAfterSeconds: number }

/**
 * A reservation: its row's id, and whether neither the email nor the address had failed
 * within the window before it (a clean attempt's password is checked first: src/dashboard/password-checks.ts).
 */
export interface Reserved {
  id: string
  clean: boolean
}

/** Tries to take the reservation's locks before answering "busy" (each try waits for no lock). */
const LOCK_TRIES = 4
/** Advisory lock key spaces (the two-integer form): one for emails, one for addresses. */
const EMAIL_LOCKS = 0x5167_0001
const ADDRESS_LOCKS = 0x5167_0002

/**
 * Sign-in throttling: an attempt is counted before its password is
 * checked and forgiven when it succeeds. First, in memory, attempts per address, per email
 * and address, and per email (per instance, before any transaction or lock); then, in the
 * database, a reservation that counts failures across instances and never waits for
 * another attempt's lock. Costs a few indexed queries per sign-in, nothing next to the
 * password hash.
 */
export function createSignInThrottle(db: Db, limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS, clock: () => number = () => performance.now()) {
  const flood = {
    address: createFailureBudget(limits.flood.perAddress),
    emailAddress: createFailureBudget(limits.flood.perEmailAndAddress),
    email: createFailureBudget(limits.flood.perEmail),
  }

  /** Counts the attempt in memory; refused when any of its three budgets is spent. Synchronous: no attempt can slip between check and count. */
  function admitAttempt(email: string, address: string): ThrottleDecision {
    const at = clock()
    const budgets = [
      ['address', address, flood.address],
      ['email-address', `${email} ${address}`, flood.emailAddress],
      ['email', email, flood.email],
    ] as const
    for (const [by, subject, budget] of budgets) {
      const wait = budget.blocked(subject, at)
      if (wait !== null) return { ok: false, by, counted: 'attempts', retryAfterSeconds: wait }
    }
    for (const [, subject, budget] of budgets) budget.record(subject, at)
    return { ok: true }
  }

  /** When `subject`'s failures fall below `limit` again (ms), or null if they already are. */
  async function blockedUntil(subject: { email?: string; ip?: string }, limit: number, now: Date): Promise<number | null> {
    const since = new Date(now.getTime() - limits.windowMs).toISOString()
    const recent = await queryRows<{ failed_at: string | Date }>(
      db,
      sql`select failed_at from sign_in_failures
          where ${subject.email === undefined ? sql`true` : sql`email = ${subject.email}`}
            and ${subject.ip === undefined ? sql`true` : sql`ip = ${subject.ip}`}
            and failed_at > ${since}::timestamptz
          order by failed_at desc
          limit ${limit}`,
    )
    // The limit-th most recent failure is the one whose ageing out lets the next attempt in.
    if (recent.length < limit) return null
    return new Date(recent[limit - 1]!.failed_at).getTime() + limits.windowMs
  }

  /**
   * The database's count, in one short transaction that waits for no lock: transaction
   * advisory locks on the email and the address, taken with `pg_try_…` (another attempt
   * holding one means "busy": tried again shortly, never waited for), make the count and
   * the insert one step across instances. Invariant: within the window, at most
   * `perEmailAndAddress` rows per email and address, `perAddress` per address and
   * `perEmail` per email. Answers the reservation, null when a limit is reached, or 'busy'.
   */
  async function reserveRow(email: string, address: string, now: Date): Promise<Reserved | null | 'busy'> {
    const since = new Date(now.getTime() - limits.windowMs).toISOString()
    return db.transaction(async (tx) => {
      const [locks] = await queryRows<{ taken: boolean }>(
        tx as unknown as Db,
        sql`select pg_try_advisory_xact_lock(${EMAIL_LOCKS}, hashtext(${email}))
                and pg_try_advisory_xact_lock(${ADDRESS_LOCKS}, hashtext(${address})) as taken`,
      )
      if (!locks?.taken) return 'busy'
      // A statement of its own, after the locks: its snapshot sees the rows of whoever held them before.
      // The counts come back too: an attempt whose email and address had none is clean.
      const rows = await queryRows<{ id: string | null; email_failures: number; address_failures: number }>(
        tx as unknown as Db,
        sql`
          with counts as (
            select (select count(*) from sign_in_failures where email = ${email} and ip = ${address} and failed_at > ${since}::timestamptz) as pair,
                   (select count(*) from sign_in_failures where email = ${email} and failed_at > ${since}::timestamptz)::int as email_failures,
                   (select count(*) from sign_in_failures where ip = ${address} and failed_at > ${since}::timestamptz)::int as address_failures
          ), reserved as (
            insert into sign_in_failures (email, ip, failed_at)
            select ${email}, ${address}, ${now.toISOString()}::timestamptz
            from counts
            where pair < ${limits.perEmailAndAddress} and email_failures < ${limits.perEmail} and address_failures < ${limits.perAddress}
            returning id
          )
          select reserved.id, counts.email_failures, counts.address_failures from counts left join reserved on true`,
      )
      const row = rows[0]
      if (!row?.id) return null
      return { id: row.id, clean: Number(row.email_failures) === 0 && Number(row.address_failures) === 0 }
    })
  }

  return {
    limits,

    /**
     * Counts an attempt before its password is checked, so concurrent guesses cannot all
     * pass a count taken before any of them failed: in memory first, then in the database.
     * Answers the reservation, or the refusal.
     */
    async reserve(
      email: string,
      clientAddress: string,
      now = new Date(),
    ): Promise<({ ok: true } & Reserved) | (ThrottleDecision & { ok: false })> {
      const address = budgetSubject(clientAddress)
      const admitted = admitAttempt(email, address)
      if (!admitted.ok) return admitted
      let reserved: Reserved | null | 'busy' = 'busy'
      for (let attempt = 1; reserved === 'busy'; attempt++) {
        reserved = await reserveRow(email, address, now)
        if (reserved !== 'busy') break
        if (attempt === LOCK_TRIES) return { ok: false, by: 'busy', counted: 'attempts', retryAfterSeconds: 1 }
        // Another attempt for this email or address holds the lock for a few milliseconds.
        await Bun.sleep(attempt * (5 + Math.random() * 10))
      }
      if (reserved !== null) return { ok: true, ...reserved }
      for (const [by, subject, limit] of [
        ['email-address', { email, ip: address }, limits.perEmailAndAddress],
        ['email', { email }, limits.perEmail],
        ['address', { ip: address }, limits.perAddress],
      ] as const) {
        const until = await blockedUntil(subject, limit, now)
        if (until !== null) {
          return { ok: false, by, counted: 'failures', retryAfterSeconds: Math.max(1, Math.ceil((until - now.getTime()) / 1000)) }
        }
      }
      // The blocking attempts aged out between the two statements: say so in a second.
      return { ok: false, by: 'busy', counted: 'attempts', retryAfterSeconds: 1 }
    },

    /** A failed attempt keeps its reservation; rows older than the window go. */
    async settleFailure(now = new Date()): Promise<void> {
      await db.delete(signInFailures).where(lt(signInFailures.failedAt, new Date(now.getTime() - limits.windowMs)))
    },

    /**
     * A successful sign-in gives its reservation back and forgives that email's failures
     * from that address: not the address's for other emails, nor the email's from other
     * addresses (a guesser elsewhere keeps what it has spent).
     */
    async settleSuccess(reservationId: string, email: string, clientAddress: string): Promise<void> {
      await db
        .delete(signInFailures)
        .where(
          or(
            eq(signInFailures.id, reservationId),
            and(eq(signInFailures.email, email), eq(signInFailures.ip, budgetSubject(clientAddress))),
          ),
        )
    },

    /** An attempt that failed for the service's sake (the database, not the password) gives its reservation back. */
    async release(reservationId: string): Promise<void> {
      await db.delete(signInFailures).where(eq(signInFailures.id, reservationId))
    },
  }
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>
