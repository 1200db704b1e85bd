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
  createdAt: t.String(),
})

export const SignInLinkSchema = t.Object(
  { url: t.String(), expiresAt: t.String() },
  { description: 'Works once, until expiresAt; the member chooses a password on it. Shown only in this answer.' },
)

export type MemberRole = typeof MemberRoleSchema.static
export type MemberRecord = typeof MemberSchema.static
/** A sign-in link as the admin API answers it (a URL); the service hands out the token. */
export type SignInLinkRecord = typeof SignInLinkSchema.static
