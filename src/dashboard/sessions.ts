import { leakNotices, type LeakNotice } from '../leaks/notices.ts'
import { disabledByFailure, type DisabledEndpoint } from '../webhooks/endpoints.ts'
import { and, asc, eq, exists, gt, isNotNull, lt } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import type { Db } from '../../db/client.ts'
import { accounts, businesses, members, memberSessions } from '../../db/schema/index.ts'
import type { MemberRole } from '../members/model.ts'
import type { Membership } from '../members/service.ts'
import { hashToken, randomToken } from '../access/secrets.ts'

/** A session ends after this long without a request... */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000
/** ...and in any case this long after sign-in. */
export const SESSION_MAX_MS = 7 * 24 * 60 * 60 * 1000
// Sliding the expiry on every request would write on every page view; once in a while is enough.
const SLIDE_AFTER_MS = 5 * 60 * 1000

/**
 * Who is signed in, as every dashboard page needs it: the account, and the membership whose
 * business the session shows (`memberId`, `role`, `businessId`, `businessName`). Every
 * query of a page is scoped to that business.
 */
export interface SignedIn {
  sessionId: string
  csrfToken: string
  accountId: string
  memberId: string
  email: string
  role: MemberRole
  businessId: string
  businessName: string
  /** Every business of the account, by name, the one shown included: the switcher. */
  memberships: Membership[]
  /** The business's leaked keys not yet dismissed: a banner on every page (docs/dashboard.md, "Leaked keys"). */
  leakNotices: LeakNotice[]
  /** The business's webhook endpoints disabled after failing: a banner on every page (docs/webhooks.md, "Retries"). */
  disabledEndpoints: DisabledEndpoint[]
}

// The account's other memberships, joined in the session's one query.
const any = alias(members, 'any_membership')
const anyBusiness = alias(businesses, 'any_business')

export function createSessionStore(db: Db) {
  return {
    async create(memberId: string, now = new Date()): Promise<{ token: string; expiresAt: Date }> {
      const token = randomToken()
      const expiresAt = new Date(now.getTime() + SESSION_IDLE_MS)
      // Old sessions of this member are swept here rather than by a timer.
      await db.delete(memberSessions).where(and(eq(memberSessions.memberId, memberId), lt(memberSessions.expiresAt, now)))
      await db.insert(memberSessions).values({
        memberId,
        tokenHash: hashToken(token),
        csrfToken: randomToken(),
        createdAt: now,
        expiresAt,
      })
      return { token, expiresAt }
    },

    /**
     * The session of a cookie's token, still valid at `now`, or null. Slides its expiry.
     * One query: the session, the membership it shows, and every membership of its account.
     */
    async authenticate(token: string, now = new Date()): Promise<SignedIn | null> {
      const rows = await db
        .select({
          sessionId: memberSessions.id,
          csrfToken: memberSessions.csrfToken,
          createdAt: memberSessions.createdAt,
          expiresAt: memberSessions.expiresAt,
          accountId: accounts.id,
          memberId: members.id,
          email: accounts.email,
          role: members.role,
          businessId: members.businessId,
          businessName: businesses.name,
          membership: { memberId: any.id, businessId: anyBusiness.id, businessName: anyBusiness.name, role: any.role },
        })
        .from(memberSessions)
        // Pending memberships are invisible: no session shows one, none lists one.
        .innerJoin(members, and(eq(members.id, memberSessions.memberId), isNotNull(members.acceptedAt)))
        .innerJoin(accounts, eq(accounts.id, members.accountId))
        .innerJoin(businesses, eq(businesses.id, members.businessId))
        .innerJoin(any, and(eq(any.accountId, accounts.id), isNotNull(any.acceptedAt)))
        .innerJoin(anyBusiness, eq(anyBusiness.id, any.businessId))
        .where(and(eq(memberSessions.tokenHash, hashToken(token)), gt(memberSessions.expiresAt, now)))
        .orderBy(asc(anyBusiness.name), asc(anyBusiness.id))
      const row = rows[0]
      if (!row) return null
      const slid = Math.min(now.getTime() + SESSION_IDLE_MS, row.createdAt.getTime() + SESSION_MAX_MS)
      if (slid - row.expiresAt.getTime() > SLIDE_AFTER_MS) {
        // Only ever moves the expiry forward, whichever request of the member writes first.
        await db
          .update(memberSessions)
          .set({ expiresAt: new Date(slid) })
          .where(and(eq(memberSessions.id, row.sessionId), lt(memberSessions.expiresAt, new Date(slid))))
      }
      const { createdAt: _c, expiresAt: _e, membership: _m, ...signedIn } = row
      const [leaks, disabled] = await Promise.all([leakNotices(db, row.businessId), disabledByFailure(db, row.businessId)])
      return { ...signedIn, memberships: rows.map((r) => r.membership), leakNotices: leaks, disabledEndpoints: disabled }
    },

    /**
     * Shows another business in this session: `memberId` must be an accepted membership of
     * the same account (a guarded UPDATE, so nothing else can be reached). False when it is not.
     */
    async switchTo(session: SignedIn, memberId: string): Promise<boolean> {
      if (!session.memberships.some((m) => m.memberId === memberId)) return false
      const moved = await db
        .update(memberSessions)
        .set({ memberId })
        .where(
          and(
            eq(memberSessions.id, session.sessionId),
            exists(
              db
                .select({ id: members.id })
                .from(members)
                .where(and(eq(members.id, memberId), eq(members.accountId, session.accountId), isNotNull(members.acceptedAt))),
            ),
          ),
        )
        .returning({ id: memberSessions.id })
      return moved.length === 1
    },

    async destroy(token: string): Promise<void> {
      await db.delete(memberSessions).where(eq(memberSessions.tokenHash, hashToken(token)))
    },
  }
}

export type SessionStore = ReturnType<typeof createSessionStore>
