import { Elysia, t } from 'elysia'
import { isStorableText } from '../shared/validation.ts'
import { byMember } from '../audit/trail.ts'
import { ApiError } from '../errors.ts'
import { publicOrigin } from '../http/public-origin.ts'
import { Uuid } from '../shared/uuid.ts'
import {
  emailProblem,
  normalizeEmail,
  signInLinkUrl,
  toMemberRecord,
  type MemberRecord,
  type MemberRole,
  type MemberService,
  type SignInLink,
} from '../members/service.ts'
import { renderFailures, type Missing } from './failures.ts'
import { FormField, TokenOnlyForm } from './forms.ts'
import { html } from './html.ts'
import { htmlPage, redirect } from './http.ts'
import type { memberMacro } from './member.ts'
import { membersPage } from './members-views.ts'
import type { SignedIn } from './sessions.ts'
import { MEMBERS_PATH, messagePage } from './views.ts'

const MISSING_MEMBER: Missing = {
  title: 'Member not found',
  page: (member) => `${member.businessName} has no such member.`,
  json: 'No member with that id in your business.',
}

/** The members of the business: everyone sees them, owners add and remove them. */
export function membersPlugin(deps: { members: MemberService; member: ReturnType<typeof memberMacro> }) {
  const { members } = deps

  async function businessMembers(member: SignedIn): Promise<MemberRecord[]> {
    return (await members.list(member.businessId, { limit: 1000, after: null, order: 'oldest' })).data
  }

  /** The members page showing, once, the link just made for `invited` (a pending membership). */
  async function withLink(member: SignedIn, request: Request, invited: MemberRecord, link: SignInLink) {
    return membersPage(member, {
      members: await businessMembers(member),
      link: {
        email: invited.email,
        url: signInLinkUrl(publicOrigin(request), link.token),
        expiresAt: link.expiresAt,
        asks: link.asks,
      },
    })
  }

  const memberGone = (member: SignedIn) =>
    htmlPage(404, messagePage({ title: MISSING_MEMBER.title, who: member, message: MISSING_MEMBER.page(member) }))

  return new Elysia({ name: 'dashboard/members' })
    .use(deps.member)
    .onError(renderFailures(MISSING_MEMBER))
    .get(
      '/settings/members',
      async ({ member, query }) =>
        htmlPage(
          200,
          membersPage(member, {
            members: await businessMembers(member),
            flash:
              query.removed !== undefined
                ? html`<div class="alert success" role="status">The member was removed and signed out.</div>`
                : undefined,
          }),
        ),
      { member: 'page', query: t.Object({ removed: FormField }) },
    )
    .post(
      '/settings/members',
      async ({ member, body, request }) => {
        const email = normalizeEmail(body.email ?? '').slice(0, 300)
        const role: MemberRole = body.role === 'owner' ? 'owner' : 'member'
        const again = async (status: number, error: string) =>
          htmlPage(status, membersPage(member, { members: await businessMembers(member), form: { email, role, error } }))
        const problem = isStorableText(email) ? emailProblem(email) : 'That email address holds a character no address has.'
        if (problem) return again(400, problem)
        try {
          const created = await members.create(member.businessId, { email, role }, byMember(member.email), 'member')
          return htmlPage(201, await withLink(member, request, created.member, created.signInLink!))
        } catch (error) {
          if (error instanceof ApiError && error.code === 'conflict')
            return again(409, `${email} is already a member of ${member.businessName}.`)
          throw error
        }
      },
      { member: { ownersTo: 'add members' }, parse: 'urlencoded', body: t.Object({ csrf: FormField, email: FormField, role: FormField }) },
    )
    .post(
      '/settings/members/:id/link',
      async ({ member, params, request }) => {
        try {
          const link = await members.issueSignInLink(params.id, 'member', new Date(), member.businessId)
          return htmlPage(201, await withLink(member, request, toMemberRecord(await members.get(params.id)), link))
        } catch (error) {
          if (error instanceof ApiError && error.code === 'not_found') return memberGone(member)
          if (error instanceof ApiError && error.code === 'conflict') {
            return htmlPage(409, messagePage({ title: 'No link made', who: member, message: error.message }))
          }
          throw error
        }
      },
      {
        member: { ownersTo: 'send sign-in links' },
        parse: 'urlencoded',
        params: t.Object({ id: Uuid }),
        body: TokenOnlyForm,
      },
    )
    .post(
      '/settings/members/:id/remove',
      async ({ member, params }) => {
        if (params.id === member.memberId) {
          return htmlPage(
            409,
            messagePage({
              title: 'Not removed',
              who: member,
              message: 'You cannot remove yourself: another owner can, or an operator through the admin API.',
            }),
          )
        }
        try {
          await members.remove(params.id, byMember(member.email), member.businessId)
        } catch (error) {
          if (error instanceof ApiError && error.code === 'not_found') return memberGone(member)
          throw error
        }
        return redirect(`${MEMBERS_PATH}?removed=1`)
      },
      { member: { ownersTo: 'remove members' }, parse: 'urlencoded', params: t.Object({ id: Uuid }), body: TokenOnlyForm },
    )
}
