import { Elysia } from 'elysia'
import { sameSecret } from '../access/secrets.ts'
import { ApiError } from '../errors.ts'
import { readForm } from './forms.ts'
import { crossSiteReason, htmlPage, readCookie, redirect, SESSION_COOKIE } from './http.ts'
import type { SessionStore, SignedIn } from './sessions.ts'
import { messagePage, SIGN_IN_PATH } from './views.ts'

/**
 * The `member` route option, what a route answers and needs:
 * - `'page'`: an HTML page; a visitor is sent to sign in and brought back;
 * - `'json'`: a helper of the pages' script; a visitor gets a 401 in the error envelope;
 * - `'form'`: a state-changing form post, which must come from one of our pages (Origin,
 *   Sec-Fetch-Site) and carry the session's CSRF token;
 * - `{ ownersTo }`: such a form that only owners may send, `ownersTo` saying what it does.
 */
export type MemberRule = 'page' | 'json' | 'form' | { ownersTo: string }

interface Visit {
  rule: MemberRule
  /** The session's member, or null for a visitor. */
  member: SignedIn | null
  /** The business the page that sent the form (or the script's request) showed, when it says. */
  shown: string | undefined
}

/** Where the session found in `transform` waits for the later hooks (as the access chain's decision does). */
const VISIT = Symbol('dashboard visit')
type Stamped = { [VISIT]?: Visit }

/** The rule and member of a request the macro has seen; src/dashboard/failures.ts renders with them. */
export function visitOf(set: object): Visit | undefined {
  return (set as Stamped)[VISIT]
}

/**
 * The dashboard's `member` macro: `{ member: 'page' }` on a route hands the signed-in member
 * to its handler as `member`. The session is read in `transform`, before Elysia validates
 * params, query and body, so that a visitor is sent to sign in whatever the path holds and
 * a bad id renders the 404 page of the member who asked. The refusals (no session, a form
 * from elsewhere or without the token, a member who is no owner) answer in `beforeHandle`:
 * the handler never runs and nothing is changed.
 */
export function memberMacro(sessions: SessionStore) {
  // Every dashboard plugin uses this one, so its forms are all read strictly (./forms.ts).
  return new Elysia({ name: 'dashboard/member' }).onParse({ as: 'scoped' }, readForm).macro({
    member: (rule: MemberRule) => ({
      async transform({ request, set, body, query }) {
        const token = readCookie(request, SESSION_COOKIE)
        const shown = businessField(rule === 'json' ? query : body)
        ;(set as Stamped)[VISIT] = { rule, member: token ? await sessions.authenticate(token) : null, shown }
      },
      beforeHandle({ request, set, body }) {
        const visit = (set as Stamped)[VISIT]
        const member = visit?.member ?? null
        if (member === null) return signInFirst(rule, request)
        if (visit?.shown !== undefined && visit.shown !== member.businessId) return otherBusiness(rule, member)
        if (rule === 'page' || rule === 'json') return
        const crossSite = crossSiteReason(request)
        if (crossSite) return refused(member, crossSite)
        const csrf = csrfOf(body)
        if (csrf === null || !sameSecret(csrf, member.csrfToken)) {
          return refused(member, 'its security token is missing or belongs to another session')
        }
        if (typeof rule === 'object' && member.role !== 'owner') return ownersOnly(member, rule.ownersTo)
      },
      resolve({ set }) {
        // beforeHandle answered for every request without a member.
        return { member: (set as Stamped)[VISIT]!.member! }
      },
    }),
  })
}

/** A visitor's answer: pages send them to sign in (and back), forms to sign in, scripts get a 401. */
export function signInFirst(rule: MemberRule, request: Request): Response {
  if (rule === 'json') throw new ApiError('unauthorized', 'Sign in to the dashboard first.')
  if (rule !== 'page') return redirect(SIGN_IN_PATH)
  const url = new URL(request.url)
  return redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(url.pathname + url.search)}`)
}

/**
 * The `business` field every form of the pages carries (and the scripts' requests): read
 * before validation, which would drop a field a route does not declare.
 */
function businessField(fields: unknown): string | undefined {
  if (typeof fields !== 'object' || fields === null || !('business' in fields)) return undefined
  return typeof fields.business === 'string' ? fields.business : ''
}

/**
 * A form (or a script) from a page that showed another business than the session shows
 * now: the member switched in another tab. Every change belongs to the business shown, so
 * nothing is done; the page says which business is shown now.
 */
function otherBusiness(rule: MemberRule, member: SignedIn): Response {
  const message = `Nothing was changed: the page you came from showed another business. You have since switched to ${member.businessName} (in another tab?). Reload the page and try again.`
  if (rule === 'json') throw new ApiError('conflict', message)
  return htmlPage(409, messagePage({ title: 'Business switched', who: member, message }))
}

function csrfOf(body: unknown): string | null {
  return typeof body === 'object' && body !== null && 'csrf' in body && typeof body.csrf === 'string' ? body.csrf : null
}

export function refused(member: SignedIn, why: string): Response {
  return htmlPage(
    403,
    messagePage({
      title: 'Form refused',
      who: member,
      message: `Nothing was changed: ${why}. Go back, reload the page and try again.`,
    }),
  )
}

/** Owners manage the business (members, identity secret); members manage keys (docs/dashboard.md). */
export function ownersOnly(member: SignedIn, what: string): Response {
  return htmlPage(
    403,
    messagePage({
      title: 'Owners only',
      who: member,
      message: `Nothing was changed: only owners of ${member.businessName} may ${what}. Ask an owner.`,
    }),
  )
}
