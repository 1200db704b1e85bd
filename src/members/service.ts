import { and, asc, eq, gt, inArray, isNotNull, isNull, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { accounts, businesses, members, memberSessions, memberSignInLinks } from '../../db/schema/index.ts'
import { hashToken, randomToken } from '../access/secrets.ts'
import { ApiError } from '../errors.ts'
import { recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { listAdminPage, type AdminPage, type Page } from '../shared/paging.ts'
import type { LinkIssuer, MemberRecord, MemberRole } from './model.ts'
import { argon2idPasswords, type Passwords } from './passwords.ts'
import { codePointLength, hasCodePointsWithin } from '../shared/characters.ts'

export type { LinkIssuer, MemberRecord, MemberRole }
/** A membership with its account's email and password hash, as the queries below read it. */
export type MemberRow = typeof members.$inferSelect & { email: string; passwordHash: string | null }

export const PASSWORD_MIN_LENGTH = 12
export const PASSWORD_MAX_LENGTH = 200
/** Long enough to reach someone by chat or mail, short enough that a lost link soon dies. */
export const SIGN_IN_LINK_TTL_MS = 24 * 60 * 60 * 1000
export const SIGN_IN_LINK_PATH = '/dashboard/sign-in/link'

/** The columns of a MemberRow: the membership, and the email and password hash of its account. */
const memberColumns = {
  id: members.id,
  businessId: members.businessId,
  accountId: members.accountId,
  role: members.role,
  createdAt: members.createdAt,
  acceptedAt: members.acceptedAt,
  email: accounts.email,
  passwordHash: accounts.passwordHash,
}

export function toMemberRecord(row: MemberRow): MemberRecord {
  return {
    id: row.id,
    businessId: row.businessId,
    email: row.email,
    role: row.role,
    passwordSet: row.passwordHash !== null,
    pending: row.acceptedAt === null,
    createdAt: row.createdAt.toISOString(),
  }
}

export function normalizeEmail(raw: string): string {
  return raw.trim().toLowerCase()
}

/** A problem with an email address as typed, or null. Deliberately loose: one @, a dot after it. */
export function emailProblem(email: string): string | null {
  if (email.length === 0) return 'Enter an email address.'
  if (!hasCodePointsWithin(email, 0, 254)) return 'An email address has at most 254 characters.'
  if (!/^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/.test(email)) {
    return `"${email}" is not an email address; write it like name@example.com.`
  }
  return null
}

export function passwordProblem(password: string): string | null {
  const length = codePointLength(password)
  if (length < PASSWORD_MIN_LENGTH) {
    return `The password has ${length} characters; use at least ${PASSWORD_MIN_LENGTH} (a few unrelated words make a good one).`
  }
  if (length > PASSWORD_MAX_LENGTH) return `Use at most ${PASSWORD_MAX_LENGTH} characters.`
  return null
}

export interface SignInLink {
  token: string
  expiresAt: Date
  /** What its page asks for now (the account may get a password before it is used). */
  asks: LinkAsks
}

/**
 * What a link lets its holder do: `choose` a password (an operator's link, or any link of
 * an account without one), or `confirm` the account's password to join the link's business.
 */
export type LinkAsks = 'choose' | 'confirm'

export function linkAsks(issuedBy: LinkIssuer, passwordHash: string | null): LinkAsks {
  return issuedBy === 'operator' || passwordHash === null ? 'choose' : 'confirm'
}

/** A valid link as its page needs it: its membership, business and what it asks. */
export type LinkRow = MemberRow & { businessName: string; issuedBy: LinkIssuer; asks: LinkAsks }

/** Why a link did not sign anyone in: gone (used, expired, unknown), or it asks the other thing. */
export type LinkRefusal = 'gone' | 'asks password' | 'asks new password' | 'wrong password'

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** A business an account belongs to, as the dashboard's switcher lists it. */
export interface Membership {
  memberId: string
  businessId: string
  businessName: string
  role: MemberRole
}

/**
 * Members of businesses: accounts (an email and one password) and their memberships (a
 * role in a business), creation by operators and owners, passwords, one-time sign-in links.
 */
export function createMemberService(db: Db, passwords: Passwords = argon2idPasswords()) {
  // Verified against when the email is unknown, so that an unknown email costs the same
  // time as a wrong password and response times do not tell which addresses are members.
  let decoyHash: Promise<string> | undefined

  async function issueLink(member: MemberRow, issuedBy: LinkIssuer, now: Date): Promise<SignInLink> {
    const token = randomToken()
    const expiresAt = new Date(now.getTime() + SIGN_IN_LINK_TTL_MS)
    await db.insert(memberSignInLinks).values({ memberId: member.id, tokenHash: hashToken(token), createdAt: now, expiresAt, issuedBy })
    return { token, expiresAt, asks: linkAsks(issuedBy, member.passwordHash) }
  }

  /**
   * The valid link of `token` with its membership and account, the account's row locked
   * until the transaction ends: two links of one account are used one after the other, so
   * the second sees the password and the dead links the first left.
   */
  async function lockLink(tx: Tx, token: string, now: Date) {
    const [row] = await tx
      .select({ linkId: memberSignInLinks.id, issuedBy: memberSignInLinks.issuedBy, ...memberColumns })
      .from(memberSignInLinks)
      .innerJoin(members, eq(members.id, memberSignInLinks.memberId))
      .innerJoin(accounts, eq(accounts.id, members.accountId))
      .where(and(eq(memberSignInLinks.tokenHash, hashToken(token)), isNull(memberSignInLinks.usedAt), gt(memberSignInLinks.expiresAt, now)))
      .for('update', { of: accounts })
    return row
  }

  /**
   * Uses the link (a guarded UPDATE: only one browser wins it), kills every other outstanding
   * link of the account, whichever business it was made for, and accepts the link's
   * membership. False when the link was used meanwhile.
   */
  async function useLink(
    tx: Tx,
    link: { linkId: string; id: string; accountId: string; businessId: string; email: string },
    now: Date,
  ): Promise<boolean> {
    const used = await tx
      .update(memberSignInLinks)
      .set({ usedAt: now })
      .where(and(eq(memberSignInLinks.id, link.linkId), isNull(memberSignInLinks.usedAt)))
      .returning({ id: memberSignInLinks.id })
    if (used.length === 0) return false
    await tx
      .update(memberSignInLinks)
      .set({ usedAt: now })
      .where(
        and(
          isNull(memberSignInLinks.usedAt),
          inArray(memberSignInLinks.memberId, tx.select({ id: members.id }).from(members).where(eq(members.accountId, link.accountId))),
        ),
      )
    const joined = await tx
      .update(members)
      .set({ acceptedAt: now })
      .where(and(eq(members.id, link.id), isNull(members.acceptedAt)))
      .returning({ id: members.id })
    if (joined.length > 0) {
      await recordChange(tx, {
        businessId: link.businessId,
        action: 'member.joined',
        by: { actor: `member:${link.email}` },
        memberId: link.id,
        changes: { pending: { from: true, to: false } },
      })
    }
    return true
  }

  async function get(memberId: string): Promise<MemberRow> {
    const [row] = await db
      .select(memberColumns)
      .from(members)
      .innerJoin(accounts, eq(accounts.id, members.accountId))
      .where(eq(members.id, memberId))
    if (!row) throw new ApiError('not_found', `No member with id ${memberId}.`)
    return row
  }

  /** The membership a valid (unused, unexpired) link belongs to, and what it asks, or null. Does not use the link. */
  async function findByLink(token: string, now = new Date()): Promise<LinkRow | null> {
    const [row] = await db
      .select({ ...memberColumns, businessName: businesses.name, issuedBy: memberSignInLinks.issuedBy })
      .from(memberSignInLinks)
      .innerJoin(members, eq(members.id, memberSignInLinks.memberId))
      .innerJoin(accounts, eq(accounts.id, members.accountId))
      .innerJoin(businesses, eq(businesses.id, members.businessId))
      .where(and(eq(memberSignInLinks.tokenHash, hashToken(token)), isNull(memberSignInLinks.usedAt), gt(memberSignInLinks.expiresAt, now)))
    return row ? { ...row, asks: linkAsks(row.issuedBy, row.passwordHash) } : null
  }

  return {
    get,

    /**
     * Makes `email` a member of the business. With a password (operators only), a new
     * account whose membership is accepted at once. Otherwise the membership is pending and
     * a one-time sign-in link for it comes back, made by `issuedBy`: the business shows to
     * the account's sessions only once the person used it (choosing a password, or, on a
     * member's link to an account that has one, typing theirs). An existing account's
     * password is never set here: whoever adds a person to their business must not gain a
     * way into that person's other businesses, nor bring that person into theirs unasked.
     */
    async create(
      businessId: string,
      input: { email: string; password?: string; role: MemberRole },
      by: ChangeAuthor,
      issuedBy: LinkIssuer,
      now = new Date(),
    ): Promise<{ member: MemberRecord; signInLink: SignInLink | null; newAccount: boolean }> {
      const email = normalizeEmail(input.email)
      const emailIssue = emailProblem(email)
      if (emailIssue) throw new ApiError('invalid_request', emailIssue, { field: 'email' })
      const passwordIssue = input.password === undefined ? null : passwordProblem(input.password)
      if (passwordIssue) throw new ApiError('invalid_request', passwordIssue, { field: 'password' })
      const [business] = await db.select({ id: businesses.id, name: businesses.name }).from(businesses).where(eq(businesses.id, businessId))
      if (!business) throw new ApiError('not_found', `No business with id ${businessId}.`)
      const passwordHash = input.password === undefined ? null : await passwords.hash(input.password)
      // The membership and its entry in the trail commit together.
      const outcome = await db.transaction(async (tx) => {
        // Creates the account or locks the existing one, so that a concurrent removal of its
        // last membership (which deletes the account) waits for this membership or goes first.
        const [account] = await tx
          .insert(accounts)
          .values({ email, passwordHash, createdAt: now })
          .onConflictDoUpdate({ target: accounts.email, set: { email: sql`excluded.email` } })
          .returning({ id: accounts.id, passwordHash: accounts.passwordHash, inserted: sql<boolean>`xmax = 0` })
        if (!account!.inserted && passwordHash !== null) return 'password refused' as const
        const [inserted] = await tx
          .insert(members)
          .values({ businessId, accountId: account!.id, role: input.role, createdAt: now, acceptedAt: passwordHash === null ? null : now })
          .onConflictDoNothing({ target: [members.accountId, members.businessId] })
          .returning()
        if (!inserted) return 'already a member' as const
        await recordChange(tx, {
          businessId,
          action: 'member.created',
          by,
          memberId: inserted.id,
          changes: { email: { from: null, to: email }, role: { from: null, to: inserted.role } },
        })
        const row: MemberRow = { ...inserted, email, passwordHash: account!.passwordHash }
        return { row, newAccount: account!.inserted }
      })
      if (outcome === 'already a member') {
        throw new ApiError('conflict', `${email} is already a member of ${business.name}.`)
      }
      if (outcome === 'password refused') {
        throw new ApiError(
          'conflict',
          `${email} already has an account, whose password is theirs: add them without a password, and they sign in with the one they have.`,
        )
      }
      const { row, newAccount } = outcome
      const signInLink = row.acceptedAt === null ? await issueLink(row, issuedBy, now) : null
      return { member: toMemberRecord(row), signInLink, newAccount }
    },

    /** A business's members, oldest first, a page at a time (the admin API lists them). */
    async list(businessId: string, page: AdminPage): Promise<Page<MemberRecord>> {
      const listed = await listAdminPage(db, members, eq(members.businessId, businessId), page, (row) => row)
      const ids = listed.data.map((m) => m.accountId)
      const owners = ids.length === 0 ? [] : await db.select().from(accounts).where(inArray(accounts.id, ids))
      const byId = new Map(owners.map((a) => [a.id, a]))
      return {
        nextCursor: listed.nextCursor,
        data: listed.data.map((m) =>
          toMemberRecord({ ...m, email: byId.get(m.accountId)!.email, passwordHash: byId.get(m.accountId)!.passwordHash }),
        ),
      }
    },

    /** The businesses an account belongs to, by name: the dashboard's switcher. */
    async memberships(accountId: string): Promise<Membership[]> {
      return db
        .select({ memberId: members.id, businessId: businesses.id, businessName: businesses.name, role: members.role })
        .from(members)
        .innerJoin(businesses, eq(businesses.id, members.businessId))
        .where(and(eq(members.accountId, accountId), isNotNull(members.acceptedAt)))
        .orderBy(businesses.name, businesses.id)
    },

    /**
     * Removes the membership; its sessions and links go with it (ON DELETE CASCADE), so a
     * session showing this business is signed out on its next request. An account left
     * without any membership is deleted too: a person who belongs nowhere keeps no password.
     * `businessId` scopes the removal (the dashboard: another business's member is not
     * found); null is the operator's view.
     */
    async remove(memberId: string, by: ChangeAuthor, businessId: string | null = null): Promise<MemberRecord> {
      const removed = await db.transaction(async (tx) => {
        const [deleted] = await tx
          .delete(members)
          .where(and(eq(members.id, memberId), businessId ? eq(members.businessId, businessId) : undefined))
          .returning()
        if (!deleted) return undefined
        // Locked first, so that a membership being added meanwhile is committed, and counted, or waits.
        const [account] = await tx.select().from(accounts).where(eq(accounts.id, deleted.accountId)).for('update')
        await tx
          .delete(accounts)
          .where(
            and(
              eq(accounts.id, deleted.accountId),
              sql`not exists (select 1 from ${members} where ${members.accountId} = ${deleted.accountId})`,
            ),
          )
        const row: MemberRow = { ...deleted, email: account!.email, passwordHash: account!.passwordHash }
        await recordChange(tx, {
          businessId: deleted.businessId,
          action: 'member.removed',
          by,
          memberId: deleted.id,
          changes: { email: { from: row.email, to: null }, role: { from: deleted.role, to: null } },
        })
        return row
      })
      if (!removed) throw new ApiError('not_found', `No member with id ${memberId}.`)
      return toMemberRecord(removed)
    },

    /**
     * A new one-time link for a membership. An operator's (admin API, CLI) may set a new
     * password: how a lost one is recovered. A member's (the dashboard, scoped to their
     * `businessId`) is only for a pending membership: it cannot replace a password, so it
     * is no use on a membership whose person already joined. Older links stay valid until
     * one of the account's links is used or they expire.
     */
    async issueSignInLink(memberId: string, issuedBy: LinkIssuer, now = new Date(), businessId: string | null = null): Promise<SignInLink> {
      const member = await get(memberId)
      if (businessId !== null && member.businessId !== businessId) throw new ApiError('not_found', `No member with id ${memberId}.`)
      if (issuedBy === 'member' && member.acceptedAt !== null) {
        throw new ApiError(
          'conflict',
          `${member.email} has joined already and signs in with their password; an operator can send them a link to reset it.`,
        )
      }
      return issueLink(member, issuedBy, now)
    },

    findByLink,

    /**
     * Uses a link once to set the account's password and join the link's business. Only an
     * operator's link, or a link of an account without a password, may: a member's link to
     * an account with one asks for it instead (acceptLink). Every other session of the
     * account ends, in every business, and every other link of it dies: whoever held an
     * older link, or the password before, is out.
     */
    async redeemLink(token: string, password: string, now = new Date()): Promise<MemberRow | LinkRefusal> {
      const passwordHash = await passwords.hash(password)
      return db.transaction(async (tx) => {
        const link = await lockLink(tx, token, now)
        if (!link) return 'gone'
        if (linkAsks(link.issuedBy, link.passwordHash) === 'confirm') return 'asks password'
        if (!(await useLink(tx, link, now))) return 'gone'
        await tx.update(accounts).set({ passwordHash }).where(eq(accounts.id, link.accountId))
        await tx
          .delete(memberSessions)
          .where(inArray(memberSessions.memberId, tx.select({ id: members.id }).from(members).where(eq(members.accountId, link.accountId))))
        const { linkId: _l, issuedBy: _i, ...member } = link
        return { ...member, passwordHash, acceptedAt: member.acceptedAt ?? now }
      })
    },

    /**
     * Uses a link once to join its business with the account's own password (a pending
     * membership of an account that has one). The password is checked against the hash
     * read before the transaction, and the transaction goes on only if the hash is still
     * that one. The account's sessions stay: nothing about the account changed.
     */
    async acceptLink(token: string, password: string, now = new Date()): Promise<MemberRow | LinkRefusal> {
      const found = await findByLink(token, now)
      if (!found) return 'gone'
      if (found.passwordHash === null) return 'asks new password'
      if (!(await passwords.verify(password, found.passwordHash))) return 'wrong password'
      return db.transaction(async (tx) => {
        const link = await lockLink(tx, token, now)
        if (!link) return 'gone'
        if (link.passwordHash !== found.passwordHash) return 'wrong password'
        if (!(await useLink(tx, link, now))) return 'gone'
        const { linkId: _l, issuedBy: _i, ...member } = link
        return { ...member, acceptedAt: member.acceptedAt ?? now }
      })
    },

    /**
     * The sign-in's lookup, before any hashing: the account with a password under this
     * email and the membership a new session opens on (the business it joined first), or
     * null. The dashboard's sign-in decides from it what the check costs.
     */
    async credentialsOf(email: string): Promise<Credentials | null> {
      const [row] = await db
        .select({ accountId: accounts.id, passwordHash: accounts.passwordHash, memberId: members.id })
        .from(accounts)
        .innerJoin(members, and(eq(members.accountId, accounts.id), isNotNull(members.acceptedAt)))
        .where(eq(accounts.email, normalizeEmail(email)))
        .orderBy(asc(members.createdAt), asc(members.id))
        .limit(1)
      return row?.passwordHash ? { accountId: row.accountId, memberId: row.memberId, passwordHash: row.passwordHash } : null
    },

    /** The password hash check itself: what costs argon2id's time and memory. */
    async checkPassword(credentials: Credentials, password: string): Promise<SignedIn | null> {
      const valid = await passwords.verify(password, credentials.passwordHash)
      return valid ? { accountId: credentials.accountId, memberId: credentials.memberId } : null
    },

    /** A check against a hash no password matches: what an unknown email costs when it must cost a real check. */
    async checkDecoy(password: string): Promise<void> {
      decoyHash ??= passwords.hash(randomToken())
      await passwords.verify(password, await decoyHash)
    },
  }
}

/** A signed-in account and the membership its session opens on. */
export interface SignedIn {
  accountId: string
  memberId: string
}

/** What a password is checked against. */
export interface Credentials extends SignedIn {
  passwordHash: string
}

export type MemberService = ReturnType<typeof createMemberService>

/** `{origin}/dashboard/sign-in/link?token=...` */
export function signInLinkUrl(origin: string, token: string): string {
  return `${origin}${SIGN_IN_LINK_PATH}?token=${encodeURIComponent(token)}`
}
