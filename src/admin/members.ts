import { Elysia, t } from 'elysia'
import { byAdmin } from '../audit/trail.ts'
import type { Db } from '../../db/client.ts'
import { MemberSchema, SignInLinkSchema } from '../members/model.ts'
import type { Passwords } from '../members/passwords.ts'
import { createMemberService, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, signInLinkUrl, type SignInLink } from '../members/service.ts'
import { publicOrigin } from '../http/public-origin.ts'
import type { AdminGuard } from '../http/admin-guard.ts'
import { alsoAnswers, noContent } from '../http/openapi-document.ts'
import { strictBody } from '../shared/validation.ts'
import { IdParams } from './model.ts'
import { AdminPageQuery, adminPage, pageSchema } from '../shared/paging.ts'
import { Chars } from '../shared/characters.ts'

const NewMember = t.Object({
  email: Chars({ minLength: 3, maxLength: 254, error: 'must be an email address, e.g. name@example.com' }),
  password: t.Optional(
    Chars({
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: PASSWORD_MAX_LENGTH,
      error: `must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters; leave it out to get a one-time sign-in link instead`,
    }),
  ),
  role: t.Union([t.Literal('owner'), t.Literal('member')], { error: 'must be "owner" or "member"' }),
})

const newMember = strictBody(NewMember)

export type NewMemberBody = typeof NewMember.static

/**
 * Operators manage dashboard members (docs/dashboard.md). Mounted inside adminRoutes,
 * which gives the /admin/v0 prefix; the token is checked here too, so these routes stay
 * closed even if mounted elsewhere.
 */
export function memberRoutes(deps: { db: Db; requireAdmin: AdminGuard; passwords: Passwords }) {
  const members = createMemberService(deps.db, deps.passwords)
  const { requireAdmin } = deps
  const linkOf = (request: Request, link: SignInLink) => ({
    url: signInLinkUrl(publicOrigin(request), link.token),
    expiresAt: link.expiresAt.toISOString(),
  })

  return new Elysia({ name: 'admin/members', detail: { tags: ['admin'], security: [{ adminToken: [] }] } })
    .onParse(requireAdmin)
    .onTransform(requireAdmin)
    .post(
      '/businesses/:id/members',
      async ({ params, body, request, set }) => {
        const created = await members.create(params.id, body, byAdmin(set), 'operator')
        set.status = 201
        return { ...created.member, ...(created.signInLink ? { signInLink: linkOf(request, created.signInLink) } : {}) }
      },
      {
        params: IdParams,
        body: newMember.schema,
        transform: newMember.check,
        parse: 'json',
        response: { 201: t.Composite([MemberSchema, t.Object({ signInLink: t.Optional(SignInLinkSchema) })]) },
        detail: {
          summary:
            "Add a dashboard member. With a password: a new account, joined at once (409 when the email has an account already: its password is its person's). Without: a pending membership and a one-time sign-in link, on which the person chooses a password (replacing the one of an existing account, whose other sessions and links end) and joins; until then the business is invisible to them. 409 when already a member of this business.",
          ...alsoAnswers('conflict'),
        },
      },
    )
    .get('/businesses/:id/members', ({ params, query }) => members.list(params.id, adminPage(query, 'oldest')), {
      params: IdParams,
      query: AdminPageQuery,
      response: pageSchema(MemberSchema),
      detail: { summary: "List a business's dashboard members, oldest first" },
    })
    .post(
      '/members/:id/sign-in-link',
      async ({ params, request, set }) => {
        const link = await members.issueSignInLink(params.id, 'operator')
        set.status = 201
        return { signInLink: linkOf(request, link) }
      },
      {
        params: IdParams,
        response: { 201: t.Object({ signInLink: SignInLinkSchema }) },
        detail: {
          summary:
            "Issue a new one-time sign-in link, e.g. for a forgotten password: on it the person chooses a new password and joins this membership's business; using it ends every other session and link of the account",
        },
      },
    )
    .delete(
      '/members/:id',
      async ({ params, set }) => {
        await members.remove(params.id, byAdmin(set))
        set.status = 204
        return null
      },
      { params: IdParams, detail: { summary: 'Remove a member; their sessions end at once', ...noContent('Removed') } },
    )
}
