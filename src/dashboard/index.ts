import { byMember } from '../audit/trail.ts'
import type { ClientAddressOf } from '../access/client-address.ts'
import { Elysia } from 'elysia'
import type { Db } from '../../db/client.ts'
import { compileOriginMatcher, parseAllowedOrigin } from '../access/origin.ts'
import { ApiError } from '../errors.ts'
import { isStorableText } from '../areas/shared/validation.ts'
import { checkKeySettings, type KeySettingsInput } from '../keys/rules.ts'
import { isScope } from '../access/scopes.ts'
import { usageReport } from '../usage/report.ts'
import { listChanges } from '../audit/trail.ts'
import { decodePosition, positionCursor, type Position } from '../areas/shared/paging.ts'
import { auditPage, keyTrailPanel } from './audit-views.ts'
import { businessPage } from './business-views.ts'
import { identitySecretOf, rollIdentitySecret } from '../identity/secret.ts'
import { narrowestEntry } from './narrowest.ts'
import { refusedOriginsPanel, scopesPanel, usagePanel, usageWindow, type UsageRange } from './usage-views.ts'
import { toKeyRecord, type ApiKeyRow, type KeyRecord, type KeyService } from '../keys/service.ts'
import { DASHBOARD_CSS, DASHBOARD_JS } from './assets.ts'
import { formErrorsOf, keySettingsOf, readKeyForm } from './forms.ts'
import { formatDateTime, relativeTime } from './format.ts'
import { html, type Html } from './html.ts'
import {
  clearCookie,
  COOKIE_PATH,
  crossSiteReason,
  htmlPage,
  json,
  readCookie,
  readForm,
  redirect,
  SESSION_COOKIE,
  setCookie,
  SIGN_IN_CSRF_COOKIE,
} from './http.ts'
import {
  formValuesOf,
  keyFormPage,
  keyListPage,
  canRoll,
  KEY_FILTERS,
  keyPage,
  keyPath,
  keyState,
  revokePage,
  ROLL_GRACES,
  rollPage,
  type KeyFilter,
  type KeyFormValues,
} from './key-views.ts'
import { publicOrigin } from '../http/public-origin.ts'
import { isUuid } from '../http/uuid.ts'
import {
  createMemberService,
  emailProblem,
  normalizeEmail,
  passwordProblem,
  PASSWORD_MAX_LENGTH,
  signInLinkUrl,
  type MemberRecord,
  type MemberRole,
} from '../members/service.ts'
import { MEMBERS_PATH, membersPage } from './members-views.ts'
import { createSessionStore, SESSION_MAX_MS, type SignedIn } from './sessions.ts'
import { createSignInThrottle, type SignInLimits } from './throttle.ts'
import { randomToken, sameSecret } from '../access/secrets.ts'
import { choosePasswordPage, KEYS_PATH, messagePage, signInPage } from './views.ts'

export interface DashboardDeps {
  db: Db
  keys: KeyService
  /** Failed sign-ins allowed per email and per address; defaults in src/dashboard/throttle.ts. */
  signInLimits?: SignInLimits
  /** The client address sign-in throttling counts by (TRUST_PROXY rule, src/access/client-address.ts). */
  clientAddress: ClientAddressOf
  /** RATE_LIMIT_PUBLIC, shown on the key form (the dashboard manages public keys). */
  defaultRateLimit: { limit: number; windowSeconds: number }
}

const SIGN_IN_PATH = '/dashboard/sign-in'
/** Entries of the trail on a key's page, and on a page of the trail. */
const KEY_TRAIL = 5
const TRAIL_PAGE = 50
const NEW_KEY_DEFAULTS: KeyFormValues = {
  name: '',
  description: '',
  origins: '',
  scopes: ['ANALYTICS_WRITE'],
  expiresOn: '',
  rateLimitLimit: '',
  rateLimitWindow: '',
  reportOnly: false,
}

/**
 * The members' dashboard (docs/dashboard.md): server-rendered pages under /dashboard,
 * signed in with a session cookie. Every key is looked up within the member's business,
 * so another business's key answers 404 on every route, exactly like a missing one.
 * Handlers return whole Responses: the pages answer in HTML, including their errors, and
 * forms are read by hand so that a bad field re-renders the form instead of a JSON 400.
 */
export function dashboardRoutes({ db, keys, signInLimits, clientAddress, defaultRateLimit }: DashboardDeps) {
  const members = createMemberService(db)
  const sessions = createSessionStore(db)
  const throttle = createSignInThrottle(db, signInLimits)

  async function signedInAs(request: Request): Promise<SignedIn | null> {
    const token = readCookie(request, SESSION_COOKIE)
    return token ? sessions.authenticate(token) : null
  }

  function toSignIn(request: Request): Response {
    const url = new URL(request.url)
    return redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(url.pathname + url.search)}`)
  }

  /** A page for signed-in members only; others are sent to sign in and brought back. */
  function page(handle: (who: SignedIn, request: Request, params: Record<string, string>, url: URL) => Promise<Response>) {
    return async ({ request, params }: { request: Request; params: Record<string, string> }) => {
      const who = await signedInAs(request)
      if (!who) return toSignIn(request)
      return handle(who, request, params, new URL(request.url))
    }
  }

  /**
   * A state-changing form post: signed in, sent by one of our pages (Origin and
   * Sec-Fetch-Site), and carrying the session's CSRF token. Anything else changes nothing.
   */
  function action(handle: (who: SignedIn, form: URLSearchParams, request: Request, params: Record<string, string>) => Promise<Response>) {
    return async ({ request, params }: { request: Request; params: Record<string, string> }) => {
      const who = await signedInAs(request)
      if (!who) return redirect(SIGN_IN_PATH)
      const crossSite = crossSiteReason(request)
      if (crossSite) return refused(who, crossSite)
      const form = await readForm(request)
      const csrf = form.get('csrf')
      if (!csrf || !sameSecret(csrf, who.csrfToken)) {
        return refused(who, 'its security token is missing or belongs to another session')
      }
      return handle(who, form, request, params)
    }
  }

  /** A JSON helper endpoint of the pages' script; signed-in members only. */
  function api(handle: (who: SignedIn, url: URL, params: Record<string, string>) => Promise<Response>) {
    return async ({ request, params }: { request: Request; params: Record<string, string> }) => {
      const who = await signedInAs(request)
      if (!who) return json(401, { error: { code: 'unauthorized', message: 'Sign in to the dashboard first.' } })
      return handle(who, new URL(request.url), params)
    }
  }

  function refused(who: SignedIn, why: string): Response {
    return htmlPage(
      403,
      messagePage({
        title: 'Form refused',
        who,
        message: `Nothing was changed: ${why}. Go back, reload the page and try again.`,
      }),
    )
  }

  function notFound(who: SignedIn): Response {
    return htmlPage(
      404,
      messagePage({
        title: 'Key not found',
        who,
        message: html`${who.businessName} has no such key. Check the address, or find the key in the list.`,
      }),
    )
  }

  /** The key, if it exists and belongs to the member's business; another business's key is null too. */
  async function ownKey(who: SignedIn, id: string | undefined): Promise<ApiKeyRow | null> {
    if (!id || !isUuid(id)) return null
    try {
      return await keys.get(who.businessId, id)
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return null
      throw error
    }
  }

  async function ownRecord(who: SignedIn, id: string | null): Promise<KeyRecord | null> {
    const row = id ? await ownKey(who, id) : null
    return row ? toKeyRecord(row) : null
  }

  function cannotEdit(who: SignedIn, key: ApiKeyRow): Response | null {
    if (key.revokedAt) {
      return htmlPage(
        409,
        messagePage({ title: 'Key revoked', who, message: 'A revoked key cannot be changed; create a new key instead.' }),
      )
    }
    if (key.type === 'private') {
      return htmlPage(
        409,
        messagePage({
          title: 'Private key',
          who,
          message: 'Private keys are created and changed by operators through the admin API; here they can be revoked.',
        }),
      )
    }
    return null
  }

  /**
   * A one-field change from a button (allow an origin, remove a scope), through the same
   * key service as the edit form: validated by the same rules and recorded in the trail.
   * Null when it was made; else the page that says why not.
   */
  async function changeKey(who: SignedIn, row: ApiKeyRow, input: KeySettingsInput): Promise<Response | null> {
    try {
      await keys.update(who.businessId, row.id, input, byMember(who.email))
      return null
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      if (error.code === 'conflict') return cannotEdit(who, { ...row, revokedAt: new Date() })
      if (error.code === 'invalid_request') {
        return htmlPage(400, messagePage({ title: 'Key not changed', who, message: `Nothing was changed: ${error.message}` }))
      }
      throw error
    }
  }

  /** A page of the trail, newest first, scoped to the member's business (and to `key`). */
  async function trailPage(who: SignedIn, url: URL, key?: KeyRecord): Promise<Response> {
    let after: Position | null = null
    try {
      after = decodePosition(url.searchParams.get('cursor') ?? undefined)
    } catch {
      after = null // a mangled cursor: the newest page
    }
    const [rows, all] = await Promise.all([
      listChanges(db, { businessId: who.businessId, keyId: key?.id, after, limit: TRAIL_PAGE + 1 }),
      keys.list(who.businessId),
    ])
    const entries = rows.slice(0, TRAIL_PAGE)
    const last = entries.at(-1)
    const next = rows.length > TRAIL_PAGE && last ? positionCursor(last.at, last.id) : null
    return htmlPage(
      200,
      auditPage(who, { entries, keys: new Map(all.map((k) => [k.id, k])), now: new Date(), next, key, first: after === null }),
    )
  }

  async function businessMembers(who: SignedIn): Promise<MemberRecord[]> {
    return (await members.list(who.businessId, { limit: 1000, after: null, order: 'oldest' })).data
  }

  /** Owners manage the business (members, identity secret); members manage keys (docs/dashboard.md). */
  function ownersOnly(who: SignedIn, what: string): Response | null {
    if (who.role === 'owner') return null
    return htmlPage(
      403,
      messagePage({
        title: 'Owners only',
        who,
        message: `Nothing was changed: only owners of ${who.businessName} may ${what}. Ask an owner.`,
      }),
    )
  }

  function cannotRoll(who: SignedIn, key: KeyRecord): Response | null {
    if (canRoll(key, new Date())) return null
    const why =
      key.type === 'private'
        ? 'Private keys are rolled by operators through the admin API or the CLI (keys roll ID --grace 1h).'
        : key.revokedAt
          ? 'A revoked key cannot be rolled; create a new key instead.'
          : key.replacedBy
            ? 'This key was already rolled; roll the key that replaced it instead.'
            : 'An expired key cannot be rolled; create a new key instead.'
    return htmlPage(409, messagePage({ title: 'Key cannot be rolled', who, message: why }))
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

  return (
    new Elysia({ name: 'dashboard', prefix: '/dashboard' })
      .get('/', () => redirect(KEYS_PATH))
      .get('/assets/dashboard.css', () => asset(DASHBOARD_CSS, 'text/css; charset=utf-8'))
      .get('/assets/dashboard.js', () => asset(DASHBOARD_JS, 'text/javascript; charset=utf-8'))

      // Signing in and out
      .get('/sign-in', async ({ request }) => {
        const next = safeNext(new URL(request.url).searchParams.get('next'))
        if (await signedInAs(request)) return redirect(next ?? KEYS_PATH)
        return signInForm(request, 200, { next: next ?? undefined })
      })
      .post(
        '/sign-in',
        async ({ request, server }) => {
          const form = await readForm(request)
          const email = normalizeEmail(form.get('email') ?? '').slice(0, 254)
          const password = (form.get('password') ?? '').slice(0, PASSWORD_MAX_LENGTH + 1)
          const next = safeNext(form.get('next')) ?? undefined
          const cookieToken = readCookie(request, SIGN_IN_CSRF_COOKIE)
          const formToken = form.get('csrf')
          if (crossSiteReason(request) || !cookieToken || !formToken || !sameSecret(cookieToken, formToken)) {
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
            const minutes = Math.ceil(throttled.retryAfterSeconds / 60)
            const subject = throttled.by === 'email' ? 'for this email' : 'from your network'
            return signInForm(
              request,
              429,
              {
                email,
                next,
                error: `Too many failed sign-ins ${subject}. Wait ${minutes} minute${minutes === 1 ? '' : 's'} and try again; an operator can send you a new sign-in link if you forgot your password.`,
              },
              { 'retry-after': String(throttled.retryAfterSeconds) },
            )
          }
          const member = email && password ? await members.verifyPassword(email, password) : null
          if (!member) {
            await throttle.settleFailure()
            return signInForm(request, 401, {
              email,
              next,
              error: 'That email and password do not match a member. Check both and try again.',
            })
          }
          await throttle.settleSuccess(throttled.id, email)
          return startSession(request, member.id, next ?? KEYS_PATH)
        },
        { parse: 'none' },
      )
      .post(
        '/sign-out',
        action(async (_who, _form, request) => {
          const token = readCookie(request, SESSION_COOKIE)
          if (token) await sessions.destroy(token)
          return redirect(SIGN_IN_PATH, [clearCookie(request, SESSION_COOKIE)])
        }),
        { parse: 'none' },
      )
      .get('/sign-in/link', async ({ request }) => {
        const token = new URL(request.url).searchParams.get('token') ?? ''
        const member = token ? await members.findByLink(token) : null
        if (!member) return linkGone()
        return htmlPage(200, choosePasswordPage({ token, email: member.email, businessName: member.businessName }))
      })
      .post(
        '/sign-in/link',
        async ({ request }) => {
          // No session yet: the link's token is the secret, and the origin checks still apply.
          if (crossSiteReason(request))
            return htmlPage(
              403,
              messagePage({ title: 'Form refused', message: 'The form came from another site; open your sign-in link again.' }),
            )
          const form = await readForm(request)
          const token = form.get('token') ?? ''
          const member = token ? await members.findByLink(token) : null
          if (!member) return linkGone()
          const password = form.get('password') ?? ''
          const problem =
            passwordProblem(password) ??
            (password === form.get('confirm') ? null : 'The two passwords differ; type the same password twice.')
          if (problem) {
            return htmlPage(400, choosePasswordPage({ token, email: member.email, businessName: member.businessName, error: problem }))
          }
          const redeemed = await members.redeemLink(token, password)
          if (!redeemed) return linkGone()
          return startSession(request, redeemed.id, KEYS_PATH)
        },
        { parse: 'none' },
      )

      // Settings > Developers > API keys
      .get(
        '/settings/developers/api-keys',
        page(async (who, _request, _params, url) => {
          const now = new Date()
          const flash = url.searchParams.has('revoked')
            ? html`<div class="alert success" role="status">The key was revoked: requests made with it are now refused.</div>`
            : undefined
          const shown = url.searchParams.get('show')
          const filter: KeyFilter = KEY_FILTERS.find((f) => f === shown) ?? 'all'
          return htmlPage(200, keyListPage(who, await keys.list(who.businessId), now, flash, filter))
        }),
      )
      .get(
        '/settings/developers/api-keys/new',
        page(async (who) => htmlPage(200, keyFormPage(who, { kind: 'create' }, NEW_KEY_DEFAULTS, {}, new Date(), defaultRateLimit))),
      )
      .post(
        '/settings/developers/api-keys',
        action(async (who, form) => {
          const now = new Date()
          const values = readKeyForm(form)
          const { input, problems } = keySettingsOf(values)
          const checked = checkKeySettings('public', input, now)
          const all = [...problems, ...(checked.ok ? [] : checked.problems)]
          if (all.length > 0) {
            return htmlPage(400, keyFormPage(who, { kind: 'create' }, values, formErrorsOf(all, values.expiresOn), now, defaultRateLimit))
          }
          const created = await keys.create(who.businessId, { ...input, type: 'public', createdBy: who.email }, byMember(who.email), now)
          return redirect(`${keyPath(created.record.id)}?created=1`)
        }),
        { parse: 'none' },
      )
      .get(
        '/settings/developers/api-keys/:id',
        page(async (who, request, params, url) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          const tested = url.searchParams.get('origin')
          const origin = tested?.trim() ?? ''
          const key = toKeyRecord(row)
          const now = new Date()
          const [replacement, predecessor] = await Promise.all([ownRecord(who, key.replacedBy), ownRecord(who, key.rolledFrom)])
          const range: UsageRange = url.searchParams.get('range') === '7d' ? '7d' : '24h'
          const [report, trail, all] = await Promise.all([
            usageReport(db, row, usageWindow(range, now.getTime())),
            listChanges(db, { businessId: who.businessId, keyId: row.id, after: null, limit: KEY_TRAIL + 1 }),
            keys.list(who.businessId),
          ])
          const byId = new Map(all.map((k) => [k.id, k]))
          // Said only when true, so that a crafted link cannot make the page claim a change.
          const allowed = key.allowedOrigins.find((e) => e === url.searchParams.get('allowed'))
          const removedParam = url.searchParams.get('removed')
          const removed = removedParam !== null && isScope(removedParam) && !key.scopes.includes(removedParam) ? removedParam : null
          return htmlPage(
            200,
            keyPage(who, key, {
              now,
              publicKey: row.publicKey,
              serviceOrigin: publicOrigin(request),
              created: url.searchParams.has('created'),
              replacement,
              predecessor,
              more: html`${usagePanel(key, report, range)}${key.type === 'public' ? refusedOriginsPanel(who, key, report, now, range) : null}${key.revokedAt ? null : scopesPanel(who, key, report, now)}${keyTrailPanel(key, trail.slice(0, KEY_TRAIL), byId, now, trail.length > KEY_TRAIL)}`,
              flash: allowed
                ? html`<div class="alert success" role="status">Added <code>${allowed}</code> to the allowed origins. It applies from the key's next request.</div>`
                : removed
                  ? html`<div class="alert success" role="status">Removed <code>${removed}</code> from the key's scopes. It applies from the key's next request.</div>`
                  : url.searchParams.has('saved')
                    ? html`<div class="alert success" role="status">Changes saved. They apply from the key's next request.</div>`
                    : url.searchParams.has('rolled') && predecessor
                      ? rolledFlash(predecessor, now)
                      : undefined,
              test: tested === null ? undefined : { origin, match: compileOriginMatcher(row.allowedOrigins).match(origin || null) },
            }),
          )
        }),
      )
      .get(
        '/settings/developers/api-keys/:id/origin-test',
        api(async (who, url, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return json(404, { error: { code: 'not_found', message: `No key with id ${params.id}.` } })
          const origin = (url.searchParams.get('origin') ?? '').trim()
          const match = compileOriginMatcher(row.allowedOrigins).match(origin || null)
          return json(200, { origin, ...match, keyState: keyState(toKeyRecord(row), new Date()) })
        }),
      )
      .get(
        '/settings/developers/api-keys/:id/first-request',
        api(async (who, _url, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return json(404, { error: { code: 'not_found', message: `No key with id ${params.id}.` } })
          const receivedAt = row.lastUsedAt?.toISOString() ?? null
          // Until one is accepted, the latest refused origin says why the site's requests fail.
          const refused = receivedAt
            ? null
            : ((await usageReport(db, row, usageWindow('24h', Date.now()))).refusedOrigins
                .filter((o) => !o.reported)
                .sort((a, b) => b.lastSeenAt.localeCompare(a.lastSeenAt))[0] ?? null)
          return json(200, { receivedAt, refused: refused && { origin: refused.origin, lastSeenAt: refused.lastSeenAt } })
        }),
      )
      .get(
        '/settings/developers/api-keys/:id/edit',
        page(async (who, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          const key = toKeyRecord(row)
          return (
            cannotEdit(who, row) ??
            htmlPage(200, keyFormPage(who, { kind: 'edit', key }, formValuesOf(key), {}, new Date(), defaultRateLimit))
          )
        }),
      )
      .post(
        '/settings/developers/api-keys/:id/edit',
        action(async (who, form, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          const blocked = cannotEdit(who, row)
          if (blocked) return blocked
          const now = new Date()
          const key = toKeyRecord(row)
          const values = readKeyForm(form)
          const { input, problems } = keySettingsOf(values, key)
          const checked = checkKeySettings('public', input, now)
          const all = [...problems, ...(checked.ok ? [] : checked.problems)]
          if (all.length > 0) {
            return htmlPage(
              400,
              keyFormPage(who, { kind: 'edit', key }, values, formErrorsOf(all, values.expiresOn), now, defaultRateLimit),
            )
          }
          try {
            await keys.update(who.businessId, row.id, input, byMember(who.email), now)
          } catch (error) {
            if (error instanceof ApiError && error.code === 'conflict') return cannotEdit(who, { ...row, revokedAt: now })!
            throw error
          }
          return redirect(`${keyPath(row.id)}?saved=1`)
        }),
        { parse: 'none' },
      )
      .get(
        '/settings/developers/api-keys/:id/revoke',
        page(async (who, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          if (row.revokedAt) return redirect(keyPath(row.id))
          return htmlPage(200, revokePage(who, toKeyRecord(row)))
        }),
      )
      .get(
        '/settings/developers/api-keys/:id/roll',
        page(async (who, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          return cannotRoll(who, toKeyRecord(row)) ?? htmlPage(200, rollPage(who, toKeyRecord(row)))
        }),
      )
      .post(
        '/settings/developers/api-keys/:id/roll',
        action(async (who, form, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          const key = toKeyRecord(row)
          const blocked = cannotRoll(who, key)
          if (blocked) return blocked
          const grace = ROLL_GRACES.find((g) => String(g.seconds) === form.get('graceSeconds'))
          if (!grace)
            return htmlPage(400, rollPage(who, key, 'Choose how long the old key may keep working: now, 1 hour, 24 hours or 7 days.'))
          try {
            const rolled = await keys.roll(who.businessId, row.id, grace.seconds, byMember(who.email))
            return redirect(`${keyPath(rolled.record.id)}?rolled=1`)
          } catch (error) {
            // Rolled (or revoked) meanwhile by someone else: the page now says so.
            if (error instanceof ApiError && error.code === 'conflict') return redirect(keyPath(row.id))
            throw error
          }
        }),
        { parse: 'none' },
      )
      .post(
        '/settings/developers/api-keys/:id/allow-origin',
        action(async (who, form, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          const blocked = cannotEdit(who, row)
          if (blocked) return blocked
          const origin = form.get('origin') ?? ''
          const narrow = narrowestEntry(origin)
          if (!narrow.ok)
            return htmlPage(400, messagePage({ title: 'Origin not added', who, message: `Nothing was changed: ${narrow.reason}` }))
          const back = `${keyPath(row.id)}?allowed=${encodeURIComponent(narrow.entry)}#refused-origins`
          // Already there (a second click, or another member was faster): nothing to change.
          if (row.allowedOrigins.includes(narrow.entry)) return redirect(back)
          const changed = await changeKey(who, row, { allowedOrigins: [...row.allowedOrigins, narrow.entry] })
          return changed ?? redirect(back)
        }),
        { parse: 'none' },
      )
      .post(
        '/settings/developers/api-keys/:id/remove-scope',
        action(async (who, form, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          const blocked = cannotEdit(who, row)
          if (blocked) return blocked
          const scope = form.get('scope') ?? ''
          const back = `${keyPath(row.id)}?removed=${encodeURIComponent(scope)}#scopes`
          // Already gone (a second click): nothing to change.
          if (!(row.scopes as string[]).includes(scope)) return redirect(back)
          const scopes = row.scopes.filter((s) => s !== scope)
          if (scopes.length === 0) {
            return htmlPage(
              400,
              messagePage({
                title: 'Scope not removed',
                who,
                message: `Nothing was changed: ${scope} is the key's only scope, and a key needs at least one. Revoke the key if it is not needed.`,
              }),
            )
          }
          return (await changeKey(who, row, { scopes })) ?? redirect(back)
        }),
        { parse: 'none' },
      )
      .post(
        '/settings/developers/api-keys/:id/revoke',
        action(async (who, _form, _request, params) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          await keys.revoke(who.businessId, row.id, byMember(who.email))
          return redirect(`${KEYS_PATH}?revoked=1`)
        }),
        { parse: 'none' },
      )

      // Business settings: the identity secret (contract section 12), owners only
      .get(
        '/settings/business',
        page(async (who) => htmlPage(200, businessPage(who, { hasSecret: (await identitySecretOf(db, who.businessId)) !== null }))),
      )
      .post(
        '/settings/business/identity-secret',
        action(async (who) => {
          const denied = ownersOnly(who, 'set or rotate the identity secret')
          if (denied) return denied
          const secret = await rollIdentitySecret(db, who.businessId)
          // Rendered, not redirected: the secret exists in this answer only (no-store).
          return htmlPage(201, businessPage(who, { hasSecret: true, secret }))
        }),
        { parse: 'none' },
      )

      // Members of the business: everyone sees them, owners add and remove them
      .get(
        '/settings/members',
        page(async (who, _request, _params, url) =>
          htmlPage(
            200,
            membersPage(who, {
              members: await businessMembers(who),
              flash: url.searchParams.has('removed')
                ? html`<div class="alert success" role="status">The member was removed and signed out.</div>`
                : undefined,
            }),
          ),
        ),
      )
      .post(
        '/settings/members',
        action(async (who, form, request) => {
          const denied = ownersOnly(who, 'add members')
          if (denied) return denied
          const email = normalizeEmail(form.get('email') ?? '').slice(0, 300)
          const role: MemberRole = form.get('role') === 'owner' ? 'owner' : 'member'
          const again = async (status: number, error: string) =>
            htmlPage(status, membersPage(who, { members: await businessMembers(who), form: { email, role, error } }))
          const problem = isStorableText(email) ? emailProblem(email) : 'That email address holds a character no address has.'
          if (problem) return again(400, problem)
          try {
            const created = await members.create(who.businessId, { email, role }, byMember(who.email))
            const link = created.signInLink!
            return htmlPage(
              201,
              membersPage(who, {
                members: await businessMembers(who),
                link: { email, url: signInLinkUrl(publicOrigin(request), link.token), expiresAt: link.expiresAt },
              }),
            )
          } catch (error) {
            if (error instanceof ApiError && error.code === 'conflict') {
              return again(
                409,
                `${email} is already a member, of ${who.businessName} or of another business; an email signs in to one business only.`,
              )
            }
            throw error
          }
        }),
        { parse: 'none' },
      )
      .post(
        '/settings/members/:id/remove',
        action(async (who, _form, _request, params) => {
          const denied = ownersOnly(who, 'remove members')
          if (denied) return denied
          const id = params.id ?? ''
          if (id === who.memberId) {
            return htmlPage(
              409,
              messagePage({
                title: 'Not removed',
                who,
                message: 'You cannot remove yourself: another owner can, or an operator through the admin API.',
              }),
            )
          }
          const gone = htmlPage(404, messagePage({ title: 'Member not found', who, message: `${who.businessName} has no such member.` }))
          if (!isUuid(id)) return gone
          try {
            await members.remove(id, byMember(who.email), who.businessId)
          } catch (error) {
            if (error instanceof ApiError && error.code === 'not_found') return gone
            throw error
          }
          return redirect(`${MEMBERS_PATH}?removed=1`)
        }),
        { parse: 'none' },
      )

      // The audit trail (contract section 10), of the business and of one key
      .get(
        '/settings/audit',
        page(async (who, _request, _params, url) => trailPage(who, url)),
      )
      .get(
        '/settings/developers/api-keys/:id/audit',
        page(async (who, _request, params, url) => {
          const row = await ownKey(who, params.id)
          if (!row) return notFound(who)
          return trailPage(who, url, toKeyRecord(row))
        }),
      )

      // Helpers of the pages' script
      .get(
        '/api/check-origins',
        api(async (_who, url) => {
          const entries = url.searchParams.getAll('entry').slice(0, 100)
          return json(200, {
            results: entries.map((value) => {
              const parsed = parseAllowedOrigin(value)
              return parsed.ok ? { value, ok: true, entry: parsed.entry } : { value, ok: false, reason: parsed.reason }
            }),
          })
        }),
      )
  )
}

function rolledFlash(old: KeyRecord, now: Date): Html {
  const ends = old.expiresAt ? new Date(old.expiresAt) : null
  const until =
    ends && ends.getTime() > now.getTime()
      ? `The old key ${old.keyHint} keeps working until ${formatDateTime(ends)} (${relativeTime(ends, now)}).`
      : `The old key ${old.keyHint} no longer works.`
  return html`<div class="alert success" role="status">This is the new key. Put its snippet on your pages in place of the old one. ${until}</div>`
}

function asset(body: string, type: string): Response {
  // Versioned URLs (?v=) let browsers keep them; a day is plenty for a few kilobytes.
  return new Response(body, {
    headers: { 'content-type': type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
  })
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
function safeNext(next: string | null): string | null {
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
