import { Elysia } from 'elysia'
import type { Db } from '../../db/client.ts'
import type { ClientAddressOf } from '../shared/client-address.ts'
import type { KeyType } from '../access/key-format.ts'
import type { Budget } from '../config.ts'
import type { KeyService } from '../keys/service.ts'
import type { Retention } from '../events/retention.ts'
import { createMemberService } from '../members/service.ts'
import type { Passwords } from '../members/passwords.ts'
import { dashboardScript, dashboardStylesheet } from './assets.ts'
import { auditPlugin } from './audit.ts'
import { businessPlugin } from './business.ts'
import { eventsPlugin } from './events.ts'
import { htmlPage, readCookie, redirect, SESSION_COOKIE } from './http.ts'
import { keysPlugin } from './keys.ts'
import { memberMacro } from './member.ts'
import { membersPlugin } from './members.ts'
import { ownKeys } from './own-keys.ts'
import { createSessionStore } from './sessions.ts'
import { signInPlugin } from './sign-in.ts'
import { createSignInThrottle, type SignInLimits } from './throttle.ts'
import { KEYS_PATH, messagePage } from './views.ts'
import { webhooksPlugin } from './webhooks.ts'
import type { WebhookEndpoints } from '../webhooks/endpoints.ts'

export interface DashboardDeps {
  db: Db
  /** The event store's database (EVENTS_DATABASE_URL's, else `db`): the events page reads it. */
  events: Db
  keys: KeyService
  /** Failed sign-ins allowed per email and per address; defaults in src/dashboard/throttle.ts. */
  signInLimits?: SignInLimits
  /** The client address sign-in throttling counts by (TRUST_PROXY rule, src/shared/client-address.ts). */
  clientAddress: ClientAddressOf
  /** RATE_LIMIT_PUBLIC and RATE_LIMIT_PRIVATE, shown on the key form of each type. */
  defaultRateLimits: Record<KeyType, Budget>
  passwords: Passwords
  /** Event retention: the events page reads within it; owners set the business's own. */
  retention: Retention
  /** The business's webhook endpoints, as the admin API manages them. */
  webhooks: WebhookEndpoints
}

/** Where the dashboard lives; src/http/errors.ts leaves its validation failures to its pages. */
export const DASHBOARD_PREFIX = '/dashboard'

/**
 * The members' dashboard (docs/dashboard.md): server-rendered pages under /dashboard,
 * signed in with a session cookie. Each plugin is one concern; the `member` macro
 * (src/dashboard/member.ts) decides who may use a route, and every key is looked up within
 * the member's business (src/dashboard/own-keys.ts).
 */
export function dashboardRoutes({
  db,
  events,
  keys,
  signInLimits,
  clientAddress,
  defaultRateLimits,
  retention,
  passwords,
  webhooks,
}: DashboardDeps) {
  const members = createMemberService(db, passwords)
  const sessions = createSessionStore(db)
  const member = memberMacro(sessions)
  const keysOfMember = ownKeys(keys)

  return new Elysia({ name: 'dashboard', prefix: DASHBOARD_PREFIX })
    .get('/', () => redirect(KEYS_PATH))
    .get('/assets/dashboard.css', async () => asset(await dashboardStylesheet(), 'text/css; charset=utf-8'))
    .get('/assets/dashboard.js', async () => asset(await dashboardScript(), 'text/javascript; charset=utf-8'))
    .use(signInPlugin({ member, members, sessions, throttle: createSignInThrottle(db, signInLimits), clientAddress }))
    .use(keysPlugin({ db, keys, ownKeys: keysOfMember, member, defaultRateLimits }))
    .use(eventsPlugin({ events, keys, member, retention }))
    .use(auditPlugin({ db, keys, ownKeys: keysOfMember, member }))
    .use(membersPlugin({ members, member }))
    .use(businessPlugin({ db, member, retention }))
    .use(webhooksPlugin({ endpoints: webhooks, member }))
}

/**
 * The page an address under /dashboard/ answers when it names no page (404), or a page that
 * only takes a form (405): with the navigation for a signed-in member, so they can go on.
 */
export function dashboardFailurePage(db: Db) {
  const sessions = createSessionStore(db)
  return async (request: Request, failure: { status: number }): Promise<Response> => {
    const token = readCookie(request, SESSION_COOKIE)
    const who = (token ? await sessions.authenticate(token) : null) ?? undefined
    const title = failure.status === 405 ? 'Not a page' : 'Page not found'
    const message =
      failure.status === 405
        ? 'This address takes a form sent from a dashboard page, not a visit.'
        : 'There is no such page in the dashboard. Check the address, or use the navigation.'
    return htmlPage(failure.status, messagePage({ title, who, message }))
  }
}

function asset(body: string, type: string): Response {
  // Versioned URLs (?v=) let browsers keep them; a day is plenty for a few kilobytes.
  return new Response(body, {
    headers: { 'content-type': type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
  })
}
