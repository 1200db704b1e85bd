import { and, eq, gt, lt } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses, members, memberSessions } from '../../db/schema/index.ts'
import type { MemberRole } from '../members/model.ts'
import { hashToken, randomToken } from '../access/secrets.ts'

/** A session ends after this long without a request... */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000
/** ...and in any case this long after sign-in. */
export const SESSION_MAX_MS = 7 * 24 * 60 * 60 * 1000
// Sliding the expiry on every request would write on every page view; once in a while is enough.
const SLIDE_AFTER_MS = 5 * 60 * 1000

/** Who is signed in, as every dashboard page needs it. */
export interface SignedIn {
  sessionId: string
  csrfToken: string
  memberId: string
  email: string
  role: MemberRole
  businessId: string
  businessName: string
}

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

    /** The session of a cookie's token, still valid at `now`, or null. Slides its expiry. */
    async authenticate(token: string, now = new Date()): Promise<SignedIn | null> {
      const [row] = await db
        .select({
          sessionId: memberSessions.id,
          csrfToken: memberSessions.csrfToken,
          createdAt: memberSessions.createdAt,
          expiresAt: memberSessions.expiresAt,
          memberId: members.id,
          email: members.email,
          role: members.role,
          businessId: members.businessId,
          businessName: businesses.name,
        })
        .from(memberSessions)
        .innerJoin(members, eq(members.id, memberSessions.memberId))
        .innerJoin(businesses, eq(businesses.id, members.businessId))
        .where(and(eq(memberSessions.tokenHash, hashToken(token)), gt(memberSessions.expiresAt, now)))
      if (!row) return null
      const slid = Math.min(now.getTime() + SESSION_IDLE_MS, row.createdAt.getTime() + SESSION_MAX_MS)
      if (slid - row.expiresAt.getTime() > SLIDE_AFTER_MS) {
        // Only ever moves the expiry forward, whichever request of the member writes first.
        await db
          .update(memberSessions)
          .set({ expiresAt: new Date(slid) })
          .where(and(eq(memberSessions.id, row.sessionId), lt(memberSessions.expiresAt, new Date(slid))))
      }
      const { createdAt: _c, expiresAt: _e, ...signedIn } = row
      return signedIn
    },

    async destroy(token: string): Promise<void> {
      await db.delete(memberSessions).where(eq(memberSessions.tokenHash, hashToken(token)))
    },
  }
}

export type SessionStore = ReturnType<typeof createSessionStore>
