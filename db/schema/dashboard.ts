import { sql } from 'drizzle-orm'
import { check, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { businesses } from './core.ts'

/**
 * People who sign in to the dashboard: one email, one password, whatever the number of
 * businesses they belong to. `email` is stored trimmed and
 * lower-cased and is unique: it is what a person signs in with. `passwordHash` is a
 * `Bun.password` hash (argon2id, salt inside); null until the person chooses a password
 * through a sign-in link. An account lives as long as it has a membership.
 */
export const accounts = pgTable('accounts', {
  id: uuid('id').primaryKey().defaultRandom(),
  email: text('email').notNull().unique(),
  passwordHash: text('password_hash'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
})

/**
 * Memberships: an account's role in one business. Created by operators (admin API), by
 * owners (dashboard) or by the first-start bootstrap; an account holds at most one per
 * business. Sessions, sign-in links and the audit trail name the membership, so that a
 * session always shows one business, and removing a membership ends what it opened.
 */
export const members = pgTable(
  'members',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['owner', 'member'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /**
     * Null while the membership is pending: made for an account by someone else than its
     * person, it shows nothing to the account's sessions until the person uses the sign-in
     * link issued for it (docs/dashboard.md, "Members and sign-in links").
     */
    acceptedAt: timestamp('accepted_at', { withTimezone: true }),
  },
  (table) => [
    index('members_business_idx').on(table.businessId),
    uniqueIndex('members_account_business_idx').on(table.accountId, table.businessId),
    check('members_role_check', sql`${table.role} in ('owner', 'member')`),
  ],
)

/**
 * Dashboard sessions. The cookie carries a random token; only its SHA-256 is stored, so
 * a copy of this table signs nobody in. `memberId` is the membership whose business the
 * session shows; switching business moves it to another membership of the same account. `expiresAt` slides forward with use (idle
 * timeout) but never past `createdAt` + the absolute lifetime (src/dashboard/sessions.ts).
 * `csrfToken` is the per-session token every state-changing form must echo.
 */
export const memberSessions = pgTable(
  'member_sessions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    memberId: uuid('member_id')
      .notNull()
      .references(() => members.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull().unique(),
    csrfToken: text('csrf_token').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (table) => [index('member_sessions_member_idx').on(table.memberId)],
)

/**
 * One-time sign-in links (first start, members created without a password, password
 * resets by operators). Only the token's SHA-256 is stored; `usedAt` is set once, by a
 * guarded UPDATE, so a link signs in at most one browser, and using any link of an account
 * sets it on every other. `issuedBy` is who made it: an `operator`'s link (admin API, CLI,
 * first start) may set or reset the password; a `member`'s (dashboard) sets one only for
 * an account without, and otherwise asks for the account's password.
 */
export const memberSignInLinks = pgTable(
  'member_sign_in_links',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    memberId: uuid('member_id')
      .notNull()
      .references(() => members.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull().unique(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    issuedBy: text('issued_by', { enum: ['member', 'operator'] }).notNull(),
  },
  (table) => [
    index('member_sign_in_links_member_idx').on(table.memberId),
    check('member_sign_in_links_issued_by_check', sql`${table.issuedBy} in ('member', 'operator')`),
  ],
)

/**
 * Failed sign-ins, counted per email and per client address over a sliding window to
 * throttle password guessing. Kept in the database so that every instance behind a load
 * balancer sees the same count; rows older than the window are deleted as new ones arrive.
 */
export const signInFailures = pgTable(
  'sign_in_failures',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    email: text('email').notNull(),
    ip: text('ip').notNull(),
    failedAt: timestamp('failed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    index('sign_in_failures_email_idx').on(table.email, table.failedAt),
    index('sign_in_failures_ip_idx').on(table.ip, table.failedAt),
  ],
)
