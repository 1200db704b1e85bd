import { t } from 'elysia'

/** Owners manage the business's members; members manage its keys (docs/dashboard.md). */
export const MemberRoleSchema = t.Union([t.Literal('owner'), t.Literal('member')])

/** A dashboard member on the wire; never carries the password or its hash. */
export const MemberSchema = t.Object({
  id: t.String(),
  businessId: t.String(),
  email: t.String(),
  role: MemberRoleSchema,
  passwordSet: t.Boolean({ description: 'false until the member chose a password through a sign-in link' }),
  pending: t.Boolean({
    description:
      'true until the person joins through the sign-in link issued for this membership; meanwhile the business is invisible to their sessions',
  }),
  createdAt: t.String(),
})

export const SignInLinkSchema = t.Object(
  { url: t.String(), expiresAt: t.String() },
  {
    description:
      "Works once, until expiresAt; on it the person chooses a password (replacing the account's, if it has one: every other session and link of the account ends) and joins the business. Shown only in this answer.",
  },
)

export type MemberRole = typeof MemberRoleSchema.static
/**
 * Who made a sign-in link: an `operator` (admin API, CLI, first start) may set or reset the
 * account's password with it; a `member` (the dashboard) only sets one for an account that
 * has none, and otherwise the person joins with the password they have.
 */
export type LinkIssuer = 'member' | 'operator'
export type MemberRecord = typeof MemberSchema.static
/** A sign-in link as the admin API answers it (a URL); the service hands out the token. */
export type SignInLinkRecord = typeof SignInLinkSchema.static
