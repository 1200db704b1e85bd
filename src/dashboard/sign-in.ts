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
import {
  choosePasswordPage,
  joinWithPasswordPage,
  KEYS_PATH,
  messagePage,
  PASSWORDS_DIFFER,
  SECTION_PATHS,
  SIGN_IN_PATH,
  signInPage,
} from './views.ts'

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
    if (credentials !== null) return hashing(priority, () => members.checkPassword(credentials, password))
    const decoy = await passwordChecks.decoy(priority)
    if (decoy === 'refused') return 'busy'
    if (decoy === 'waited') return null
    // No real check measured yet: this unknown email pays one, and the decoys learn its time.
    return hashing(priority, async () => {
      await members.checkDecoy(password)
      return null
    })
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

  /**
   * Checks a password under the sign-in throttle (per email and client address) and the
   * bound on concurrent hashes: a link that asks for the account's password is no way
   * around either. `check` is given the attempt's priority (clean: neither its email nor its
   * address failed lately) and answers null for a wrong password, which counts as a
   * failure, or 'busy' when no password was checked (the line was full), which counts as
   * nothing.
   */
  async function throttledCheck<T>(
    email: string,
    address: string,
    check: (priority: CheckPriority) => Promise<T | null | 'busy'>,
  ): Promise<{ value: T | null } | { throttled: ThrottleDecision & { ok: false } }> {
    const throttled = await throttle.reserve(email, address)
    if (!throttled.ok) return { throttled }
    let value: T | null | 'busy'
    try {
      value = await check(throttled.clean ? 'clean' : 'suspect')
    } catch (error) {
      // The service failed, not the password: the attempt is not counted against anyone.
      await throttle.release(throttled.id).catch(() => {})
      throw error
    }
    if (value === 'busy') {
      await throttle.release(throttled.id)
      return { throttled: { ok: false, by: 'busy', counted: 'attempts', retryAfterSeconds: 1 } }
    }
    if (value === null) await throttle.settleFailure()
    else await throttle.settleSuccess(throttled.id, email, address)
    return { value }
  }

  /** Runs a hash in one of the bounded slots (clean attempts first), or answers 'busy' at once. */
  async function hashing<T>(priority: CheckPriority, work: () => Promise<T>): Promise<T | 'busy'> {
    const started = performance.now()
    const slot = await passwordChecks.acquire(priority)
    if (slot === null) return 'busy'
    try {
      return await work()
    } finally {
      passwordChecks.took(performance.now() - started)
      slot()
    }
  }

  /** A member's link to an account that has a password: its person joins the link's business with it. */
  async function joinWithPassword(
    request: Request,
    address: string,
    page: { token: string; email: string; businessName: string },
    password: string,
  ): Promise<Response> {
    const checked = await throttledCheck(page.email, address, async (priority) => {
      if (!password) return null
      return hashing(priority, async () => {
        const outcome = await members.acceptLink(page.token, password)
        return outcome === 'wrong password' ? null : outcome
      })
    })
    if ('throttled' in checked) {
      const response = htmlPage(429, joinWithPasswordPage({ ...page, error: throttledMessage(checked.throttled) }))
      response.headers.set('retry-after', String(checked.throttled.retryAfterSeconds))
      return response
    }
    if (checked.value === null) {
      return htmlPage(401, joinWithPasswordPage({ ...page, error: `That is not the password of ${page.email}. Check it and try again.` }))
    }
    if (typeof checked.value === 'string') return linkGone()
    return startSession(request, checked.value.id, KEYS_PATH)
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
        const checked = await throttledCheck(email, clientAddress(request, server), async (priority) =>
          email && password ? checkPassword(email, password, priority) : null,
        )
        if ('throttled' in checked) {
          return signInForm(
            request,
            429,
            { email, next, error: throttledMessage(checked.throttled) },
            { 'retry-after': String(checked.throttled.retryAfterSeconds) },
          )
        }
        if (checked.value === null) {
          return signInForm(request, 401, {
            email,
            next,
            error: 'That email and password do not match a member. Check both and try again.',
          })
        }
        return startSession(request, checked.value.memberId, next ?? KEYS_PATH)
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
        const link = token ? await members.findByLink(token) : null
        if (!link) return linkGone()
        const page = link.asks === 'confirm' ? joinWithPasswordPage : choosePasswordPage
        return htmlPage(200, page({ token, email: link.email, businessName: link.businessName }))
      },
      { query: t.Object({ token: FormField }) },
    )
    .post(
      '/sign-in/link',
      async ({ request, server, body }) => {
        // No session yet: the link's token is the secret, and the origin checks still apply.
        if (crossSiteReason(request)) {
          return htmlPage(
            403,
            messagePage({ title: 'Form refused', message: 'The form came from another site; open your sign-in link again.' }),
          )
        }
        const token = body.token ?? ''
        const link = token ? await members.findByLink(token) : null
        if (!link) return linkGone()
        const password = (body.password ?? '').slice(0, PASSWORD_MAX_LENGTH + 1)
        const page = { token, email: link.email, businessName: link.businessName }
        if (link.asks === 'confirm') return joinWithPassword(request, clientAddress(request, server), page, password)
        const problem = passwordProblem(password) ?? (password === body.confirm ? null : PASSWORDS_DIFFER)
        if (problem) return htmlPage(400, choosePasswordPage({ ...page, error: problem, password }))
        const redeemed = await members.redeemLink(token, password)
        // The account got a password meanwhile (another of its links): this one now asks for it.
        if (redeemed === 'asks password') return htmlPage(409, joinWithPasswordPage({ ...page, error: PASSWORD_SET_MEANWHILE }))
        if (typeof redeemed === 'string') return linkGone()
        return startSession(request, redeemed.id, KEYS_PATH)
      },
      { parse: 'urlencoded', body: ChoosePasswordForm },
    )
}

const PASSWORD_SET_MEANWHILE = 'This account has had a password set meanwhile: type it to join.'

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
