import { and, eq, gt, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses, members, memberSessions, memberSignInLinks } from '../../db/schema/index.ts'
import { hashToken, randomToken } from '../access/secrets.ts'
import { ApiError } from '../errors.ts'
import { recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { listAdminPage, type AdminPage, type Page } from '../shared/paging.ts'
import type { MemberRecord, MemberRole } from './model.ts'

export type { MemberRecord, MemberRole }
export type MemberRow = typeof members.$inferSelect

export const PASSWORD_MIN_LENGTH = 12
export const PASSWORD_MAX_LENGTH = 200
/** Long enough to reach someone by chat or mail, short enough that a lost link soon dies. */
export const SIGN_IN_LINK_TTL_MS = 24 * 60 * 60 * 1000
export const SIGN_IN_LINK_PATH = '/dashboard/sign-in/link'

export function toMemberRecord(row: MemberRow): MemberRecord {
  return {
    id: row.id,
    businessId: row.businessId,
    email: row.email,
    role: row.role,
    passwordSet: row.passwordHash !== null,
    createdAt: row.createdAt.toISOString(),
  }
}

export function normalizeEmail(raw: string): string {
  return raw.trim().toLowerCase()
}

/** A problem with an email address as typed, or null. Deliberately loose: one @, a dot after it. */
export function emailProblem(email: string): string | null {
  if (email.length === 0) return 'Enter an email address.'
  if (email.length > 254) return 'An email address has at most 254 characters.'
  if (!/^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/.test(email)) {
    return `"${email}" is not an email address; write it like name@example.com.`
  }
  return null
}

export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) {
    return `The password has ${password.length} characters; use at least ${PASSWORD_MIN_LENGTH} (a few unrelated words make a good one).`
  }
  if (password.length > PASSWORD_MAX_LENGTH) return `Use at most ${PASSWORD_MAX_LENGTH} characters.`
  return null
}

export interface SignInLink {
  token: string
  expiresAt: Date
}

// Verified against when the email is unknown, so that an unknown email costs the same time
// as a wrong password and response times do not tell which addresses are members.
let decoyHash: Promise<string> | undefined

/** Members of businesses: creation by operators, passwords, one-time sign-in links. */
export function createMemberService(db: Db) {
  async function issueLink(memberId: string, now: Date): Promise<SignInLink> {
    const token = randomToken()
    const expiresAt = new Date(now.getTime() + SIGN_IN_LINK_TTL_MS)
    await db.insert(memberSignInLinks).values({ memberId, tokenHash: hashToken(token), createdAt: now, expiresAt })
    return { token, expiresAt }
  }

  async function get(memberId: string): Promise<MemberRow> {
    const [row] = await db.select().from(members).where(eq(members.id, memberId))
    if (!row) throw new ApiError('not_found', `No member with id ${memberId}.`)
    return row
  }

  return {
    get,

    /**
     * Without a password the member gets a one-time sign-in link instead, on which they
     * choose their password.
     */
    async create(
      businessId: string,
      input: { email: string; password?: string; role: MemberRole },
      by: ChangeAuthor,
      now = new Date(),
    ): Promise<{ member: MemberRecord; signInLink: SignInLink | null }> {
      const email = normalizeEmail(input.email)
      const problem = emailProblem(email) ?? (input.password === undefined ? null : passwordProblem(input.password))
      if (problem) throw new ApiError('invalid_request', problem)
      const [business] = await db.select({ id: businesses.id }).from(businesses).where(eq(businesses.id, businessId))
      if (!business) throw new ApiError('not_found', `No business with id ${businessId}.`)
      const passwordHash = input.password === undefined ? null : await Bun.password.hash(input.password)
      // The member and its entry in the trail commit together (contract section 10).
      const row = await db.transaction(async (tx) => {
        const [inserted] = await tx
          .insert(members)
          .values({ businessId, email, passwordHash, role: input.role, createdAt: now })
          .onConflictDoNothing({ target: members.email })
          .returning()
        if (inserted) {
          await recordChange(tx, {
            businessId,
            action: 'member.created',
            by,
            memberId: inserted.id,
            changes: { email: { from: null, to: inserted.email }, role: { from: null, to: inserted.role } },
          })
        }
        return inserted
      })
      if (!row) {
        throw new ApiError(
          'conflict',
          `A member with email ${email} already exists; an email signs in to one business only. Issue them a new sign-in link instead (POST /admin/v0/members/:id/sign-in-link).`,
        )
      }
      const signInLink = passwordHash === null ? await issueLink(row.id, now) : null
      return { member: toMemberRecord(row), signInLink }
    },

    /** A business's members, oldest first, a page at a time (the admin API lists them). */
    list(businessId: string, page: AdminPage): Promise<Page<MemberRecord>> {
      return listAdminPage(db, members, eq(members.businessId, businessId), page, toMemberRecord)
    },

    /**
     * Removes the member; their sessions and links go with them (ON DELETE CASCADE), so they
     * are signed out on their next request. `businessId` scopes the removal (the dashboard:
     * another business's member is not found); null is the operator's view.
     */
    async remove(memberId: string, by: ChangeAuthor, businessId: string | null = null): Promise<MemberRecord> {
      const removed = await db.transaction(async (tx) => {
        const [deleted] = await tx
          .delete(members)
          .where(and(eq(members.id, memberId), businessId ? eq(members.businessId, businessId) : undefined))
          .returning()
        if (deleted) {
          await recordChange(tx, {
            businessId: deleted.businessId,
            action: 'member.removed',
            by,
            memberId: deleted.id,
            changes: { email: { from: deleted.email, to: null }, role: { from: deleted.role, to: null } },
          })
        }
        return deleted
      })
      if (!removed) throw new ApiError('not_found', `No member with id ${memberId}.`)
      return toMemberRecord(removed)
    },

    /** A new one-time link, e.g. for a member who forgot their password. Older links stay valid until used or expired. */
    async issueSignInLink(memberId: string, now = new Date()): Promise<SignInLink> {
      await get(memberId)
      return issueLink(memberId, now)
    },

    /** The member a valid (unused, unexpired) link belongs to, or null. Does not use the link. */
    async findByLink(token: string, now = new Date()): Promise<(MemberRow & { businessName: string }) | null> {
      const [row] = await db
        .select({ member: members, businessName: businesses.name })
        .from(memberSignInLinks)
        .innerJoin(members, eq(members.id, memberSignInLinks.memberId))
        .innerJoin(businesses, eq(businesses.id, members.businessId))
        .where(
          and(eq(memberSignInLinks.tokenHash, hashToken(token)), isNull(memberSignInLinks.usedAt), gt(memberSignInLinks.expiresAt, now)),
        )
      return row ? { ...row.member, businessName: row.businessName } : null
    },

    /**
     * Uses a link once and sets the member's password. The guarded UPDATE is the only
     * thing that marks a link used, so two browsers racing with one link cannot both win.
     * Every other session of the member ends: choosing a password through a link is also
     * how a lost password is replaced.
     */
    async redeemLink(token: string, password: string, now = new Date()): Promise<MemberRow | null> {
      const passwordHash = await Bun.password.hash(password)
      return db.transaction(async (tx) => {
        const [link] = await tx
          .update(memberSignInLinks)
          .set({ usedAt: now })
          .where(
            and(eq(memberSignInLinks.tokenHash, hashToken(token)), isNull(memberSignInLinks.usedAt), gt(memberSignInLinks.expiresAt, now)),
          )
          .returning({ memberId: memberSignInLinks.memberId })
        if (!link) return null
        const [row] = await tx.update(members).set({ passwordHash }).where(eq(members.id, link.memberId)).returning()
        await tx.delete(memberSessions).where(eq(memberSessions.memberId, link.memberId))
        return row ?? null
      })
    },

    /** The member whose email and password these are, or null; costs the same either way. */
    async verifyPassword(email: string, password: string): Promise<MemberRow | null> {
      const [row] = await db
        .select()
        .from(members)
        .where(eq(members.email, normalizeEmail(email)))
      if (!row?.passwordHash) {
        decoyHash ??= Bun.password.hash(randomToken())
        await Bun.password.verify(password, await decoyHash).catch(() => false)
        return null
      }
      const valid = await Bun.password.verify(password, row.passwordHash).catch(() => false)
      return valid ? row : null
    },
  }
}

export type MemberService = ReturnType<typeof createMemberService>

/** `{origin}/dashboard/sign-in/link?token=...` */
export function signInLinkUrl(origin: string, token: string): string {
  return `${origin}${SIGN_IN_LINK_PATH}?token=${encodeURIComponent(token)}`
}
