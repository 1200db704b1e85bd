import { Elysia, t } from 'elysia'
import type { ClientAddressOf } from '../shared/client-address.ts'
import { randomToken, sameSecret } from '../access/secrets.ts'
import { isStorableText } from '../shared/validation.ts'
import { normalizeEmail, passwordProblem, PASSWORD_MAX_LENGTH, type MemberService, type SignedIn } from '../members/service.ts'
import { NO_SUCH_PAGE, renderFailures } from './failures.ts'
import { FormField, TokenOnlyForm } from './forms.ts'
import {
  clearCookie,
  COOKIE_PATH,
  crossSiteReason,
  htmlPage,
  readCookie,
  redirect,
  SESSION_COOKIE,
  setCookie,
  SIGN_IN_CSRF_COOKIE,
} from './http.ts'
import type { memberMacro } from './member.ts'
import { SESSION_MAX_MS, type SessionStore } from './sessions.ts'
import { type CheckPriority, createPasswordChecks } from './password-checks.ts'
import type { SignInThrottle, ThrottleDecision } from './throttle.ts'
import { choosePasswordPage, KEYS_PATH, messagePage, PASSWORDS_DIFFER, SECTION_PATHS, SIGN_IN_PATH, signInPage } from './views.ts'

const SignInForm = t.Object({ csrf: FormField, email: FormField, password: FormField, next: FormField })
const ChoosePasswordForm = t.Object({ token: FormField, password: FormField, confirm: FormField })

/**
 * Signing in and out (docs/dashboard.md): the password form, the one-time link on which a
 * new member chooses a password, and sign-out. The sign-in form has no session yet, so it
 * carries a double-submit token of its own (login CSRF); the link's token is its secret.
 */
export function signInPlugin(deps: {
  member: ReturnType<typeof memberMacro>
  members: MemberService
  sessions: SessionStore
  throttle: SignInThrottle
  clientAddress: ClientAddressOf
}) {
  const { members, sessions, throttle, clientAddress } = deps
  const passwordChecks = createPasswordChecks()

  /**
   * The password check at a bounded cost (docs/decisions.md, "Sign-in under a flood from
   * many addresses"): a clean attempt's check goes before suspect ones, and an unknown
   * email costs no hash, only a decoy's wait as long as a real check. 'busy': nothing was
   * checked, the line being full.
   */
  async function checkPassword(email: string, password: string, priority: CheckPriority): Promise<SignedIn | null | 'busy'> {
    const credentials = await members.credentialsOf(email)
    if (credentials === null) {
      const decoy = await passwordChecks.decoy(priority)
      if (decoy === 'refused') return 'busy'
      if (decoy === 'waited') return null
    }
    const started = performance.now()
    const slot = await passwordChecks.acquire(priority)
    if (slot === null) return 'busy'
    try {
      if (credentials !== null) return await members.checkPassword(credentials, password)
      // No real check measured yet: this unknown email pays one, and the decoys learn its time.
      await members.checkDecoy(password)
      return null
    } finally {
      passwordChecks.took(performance.now() - started)
      slot()
    }
  }

  /** The sign-in form's double-submit token: reused while its cookie lives, so two tabs both work. */
  function signInForm(
    request: Request,
    status: number,
    state: { email?: string; next?: string; error?: string },
    headers?: Record<string, string>,
  ) {
    const existing = readCookie(request, SIGN_IN_CSRF_COOKIE)
    const csrf = existing && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : randomToken()
    const response = htmlPage(status, signInPage({ csrf, ...state }), [setCookie(request, SIGN_IN_CSRF_COOKIE, csrf, 3600)])
    for (const [name, value] of Object.entries(headers ?? {})) response.headers.set(name, value)
    return response
  }

  async function startSession(request: Request, memberId: string, location: string): Promise<Response> {
    const session = await sessions.create(memberId)
    return redirect(location, [
      setCookie(request, SESSION_COOKIE, session.token, Math.floor(SESSION_MAX_MS / 1000)),
      clearCookie(request, SIGN_IN_CSRF_COOKIE),
    ])
  }

  return new Elysia({ name: 'dashboard/sign-in' })
    .use(deps.member)
    .onError(renderFailures(NO_SUCH_PAGE))
    .get(
      '/sign-in',
      async ({ request, query }) => {
        const next = safeNext(query.next)
        const token = readCookie(request, SESSION_COOKIE)
        if (token && (await sessions.authenticate(token))) return redirect(next ?? KEYS_PATH)
        return signInForm(request, 200, { next: next ?? undefined })
      },
      { query: t.Object({ next: FormField }) },
    )
    .post(
      '/sign-in',
      async ({ request, server, body }) => {
        const email = normalizeEmail(body.email ?? '').slice(0, 254)
        const password = (body.password ?? '').slice(0, PASSWORD_MAX_LENGTH + 1)
        const next = safeNext(body.next) ?? undefined
        const cookieToken = readCookie(request, SIGN_IN_CSRF_COOKIE)
        if (crossSiteReason(request) || !cookieToken || !body.csrf || !sameSecret(cookieToken, body.csrf)) {
          return signInForm(request, 403, {
            email,
            next,
            error: 'The sign-in form expired or came from another site. Please sign in again.',
          })
        }
        // U+0000 cannot reach the throttle's or the members' queries (PostgreSQL refuses it:
        // a 500); no member has such an address, and no password is tried for it.
        if (!isStorableText(email)) {
          return signInForm(request, 400, { next, error: 'That email address holds a character no address has. Check it and try again.' })
        }
        const address = clientAddress(request, server)
        const throttled = await throttle.reserve(email, address)
        if (!throttled.ok) {
          return signInForm(
            request,
            429,
            { email, next, error: throttledMessage(throttled) },
            {
              'retry-after': String(throttled.retryAfterSeconds),
            },
          )
        }
        let member: SignedIn | null | 'busy'
        try {
          member = email && password ? await checkPassword(email, password, throttled.clean ? 'clean' : 'suspect') : null
        } catch (error) {
          // The service failed, not the password: the attempt is not counted against anyone.
          await throttle.release(throttled.id).catch(() => {})
          throw error
        }
        if (member === 'busy') {
          // No password was checked: the attempt is not counted against anyone.
          await throttle.release(throttled.id)
          return signInForm(
            request,
            429,
            { email, next, error: throttledMessage({ ok: false, by: 'busy', counted: 'attempts', retryAfterSeconds: 1 }) },
            {
              'retry-after': '1',
            },
          )
        }
        if (!member) {
          await throttle.settleFailure()
          return signInForm(request, 401, {
            email,
            next,
            error: 'That email and password do not match a member. Check both and try again.',
          })
        }
        await throttle.settleSuccess(throttled.id, email, address)
        return startSession(request, member.memberId, next ?? KEYS_PATH)
      },
      { parse: 'urlencoded', body: SignInForm },
    )
    .post(
      '/sign-out',
      async ({ request }) => {
        const token = readCookie(request, SESSION_COOKIE)
        if (token) await sessions.destroy(token)
        return redirect(SIGN_IN_PATH, [clearCookie(request, SESSION_COOKIE)])
      },
      { member: 'form', parse: 'urlencoded', body: TokenOnlyForm },
    )
    .post(
      '/switch',
      async ({ member, body }) => {
        // Only a membership of the signed-in account; anything else is the same 404.
        if (!(await sessions.switchTo(member, body.member ?? ''))) {
          return htmlPage(
            404,
            messagePage({ title: 'Business not found', who: member, message: 'You are not a member of that business (any more).' }),
          )
        }
        return redirect(SECTION_PATHS.find((p) => p === body.next) ?? KEYS_PATH)
      },
      { member: 'form', parse: 'urlencoded', body: t.Object({ csrf: FormField, member: FormField, next: FormField }) },
    )
    .get(
      '/sign-in/link',
      async ({ query }) => {
        const token = query.token ?? ''
        const member = token ? await members.findByLink(token) : null
        if (!member) return linkGone()
        return htmlPage(200, choosePasswordPage({ token, email: member.email, businessName: member.businessName }))
      },
      { query: t.Object({ token: FormField }) },
    )
    .post(
      '/sign-in/link',
      async ({ request, body }) => {
        // No session yet: the link's token is the secret, and the origin checks still apply.
        if (crossSiteReason(request)) {
          return htmlPage(
            403,
            messagePage({ title: 'Form refused', message: 'The form came from another site; open your sign-in link again.' }),
          )
        }
        const token = body.token ?? ''
        const member = token ? await members.findByLink(token) : null
        if (!member) return linkGone()
        const password = body.password ?? ''
        const problem = passwordProblem(password) ?? (password === body.confirm ? null : PASSWORDS_DIFFER)
        if (problem) {
          return htmlPage(
            400,
            choosePasswordPage({ token, email: member.email, businessName: member.businessName, error: problem, password }),
          )
        }
        const redeemed = await members.redeemLink(token, password)
        if (!redeemed) return linkGone()
        return startSession(request, redeemed.id, KEYS_PATH)
      },
      { parse: 'urlencoded', body: ChoosePasswordForm },
    )
}

/** What a throttled sign-in is told: who is limited, and how long to wait. */
function throttledMessage({ by, counted, retryAfterSeconds }: ThrottleDecision & { ok: false }): string {
  if (by === 'busy') return 'Too many sign-ins at once. Wait a second and try again.'
  const minutes = Math.ceil(retryAfterSeconds / 60)
  const wait =
    retryAfterSeconds < 60
      ? `${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}`
      : `${minutes} minute${minutes === 1 ? '' : 's'}`
  const subject = { 'email-address': 'for this email from your network', email: 'for this email', address: 'from your network' }[by]
  return `Too many ${counted === 'failures' ? 'failed sign-ins' : 'sign-in attempts'} ${subject}. Wait ${wait} and try again; an operator can send you a new sign-in link if you forgot your password.`
}

function linkGone(): Response {
  return htmlPage(
    410,
    messagePage({
      title: 'Sign-in link expired',
      message: 'This sign-in link has expired or was already used. Sign in with your password, or ask an operator for a new link.',
    }),
  )
}

/**
 * Only a dashboard path of this site: never another site (an open redirect) nor `//host`.
 * The path is resolved against a placeholder origin and re-serialized, so what reaches the
 * Location header is percent-encoded ASCII (a raw `€` there made Response throw: a 500),
 * and `/dashboard/../admin` resolves before it is judged.
 */
function safeNext(next: string | undefined): string | null {
  if (!next?.startsWith(`${COOKIE_PATH}/`) || next.startsWith('//') || /[\\\s]/.test(next)) return null
  let url: URL
  try {
    url = new URL(next, 'http://dashboard.invalid')
  } catch {
    return null
  }
  if (url.origin !== 'http://dashboard.invalid' || !url.pathname.startsWith(`${COOKIE_PATH}/`)) return null
  return url.pathname + url.search
}
