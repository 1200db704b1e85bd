import { beforeEach, describe, expect, test } from 'bun:test'
import { PUBLIC_KEY_SCOPES, SCOPES } from '../../src/access/scopes.ts'
import { DEFAULT_RATE_LIMITS } from '../../src/config.ts'
import type { ErrorCode } from '../../src/errors.ts'
import { declaredApiRoutes, ROUTE_TABLE, routeName, seedWorld, type RouteEntry, type World } from '../support/route-table.ts'
import { call, errorOf, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'
import { storedState } from '../support/stored-state.ts'
import { witnessHandlers } from '../support/witness.ts'

/**
 * The security matrix (docs/api.md, "Keys" and "Routes"): every /api/v0 route of the route table,
 * sent as a valid request with each kind of bad key. Each refusal answers its status and
 * code, the handler never runs, and nothing is written: no row, no lastUsedAt. The same
 * valid request with a good key succeeds, so the table cannot rot, and a route the app
 * declares that the table lacks fails the first test.
 */

/** Allowed by the entry `example.com` the public keys below hold. */
const ORIGIN = 'https://www.example.com'
const REFUSED_ORIGIN = 'https://example.com.evil.io'

/** The access chain's clock: a test moves it to expire a key, or past lastUsedAt's minute. */
let skew = 0
const service = await testService({
  now: () => Date.now() + skew,
  // Every route draws a few invalid and expired keys here; the budget for those is
  // test/api/rate-limit.test.ts's subject, not this file's.
  rateLimits: { ...DEFAULT_RATE_LIMITS, apiAuthFailures: { limit: 1_000_000, windowSeconds: 60 } },
})
// Before the app answers anything: the witness joins each route when it is first composed.
const reached = witnessHandlers(service)

beforeEach(() => {
  skew = 0
  reached.length = 0
})

/** The scopes a key needs to pass check 7 on this route (whoami needs none; the key holds one anyway). */
const granting = (entry: RouteEntry) => [entry.scope ?? 'MEMORY_READ']

function send(entry: RouteEntry, w: World, key: string | null, origin: string, body?: unknown) {
  const request = entry.request(w)
  return call(service, request.path, {
    method: entry.method,
    key,
    origin,
    body: body ?? request.body,
    headers: request.headers,
  })
}

test('the table holds every /api/v0 route the app declares, and no other', () => {
  const declared = declaredApiRoutes(service.app).map(routeName).sort()
  const tabled = ROUTE_TABLE.map(routeName).sort()
  expect(declared.length).toBeGreaterThan(0)
  expect({
    missingFromTable: declared.filter((r) => !tabled.includes(r)),
    notDeclared: tabled.filter((r) => !declared.includes(r)),
  }).toEqual({ missingFromTable: [], notDeclared: [] })
  expect(new Set(tabled).size).toBe(tabled.length)
})

test('every route declares its access rule (docs/api.md, "Endpoints and scopes"), as the table states it', () => {
  const declared = Object.fromEntries(
    declaredApiRoutes(service.app).map((r) => [routeName(r), r.access && { scope: r.access.scope, public: r.access.public }]),
  )
  const tabled = Object.fromEntries(ROUTE_TABLE.map((entry) => [routeName(entry), { scope: entry.scope, public: entry.public }]))
  expect(declared).toEqual(tabled)
})

test('a public key may hold exactly the scopes the public routes need', () => {
  const publicScopes = ROUTE_TABLE.flatMap((entry) => (entry.public && entry.scope !== null ? [entry.scope] : []))
  expect(publicScopes.filter((scope) => !PUBLIC_KEY_SCOPES.includes(scope))).toEqual([])
  // And no more: a scope no public route uses would grant nothing to a key that reaches public routes only.
  expect(new Set(PUBLIC_KEY_SCOPES)).toEqual(new Set(publicScopes))
})

interface Refusal {
  name: string
  status: number
  code: ErrorCode
  /** Whether the case can arise on this route. */
  applies?: (entry: RouteEntry) => boolean
  /** Stores what the request needs; answers the key, the Origin and, to replace the valid one, the body to send. */
  arrange: (w: World, entry: RouteEntry) => Promise<{ key: string | null; origin?: string; body?: unknown }>
  /** More of the answer to check. */
  check?: (response: Response, entry: RouteEntry, message: string) => void
}

const challenged = (response: Response) => expect(response.headers.get('www-authenticate')).toStartWith('Bearer realm="api"')

const REFUSALS: Refusal[] = [
  {
    name: 'no key',
    status: 401,
    code: 'missing_api_key',
    arrange: async () => ({ key: null }),
    check: (response) => expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api"'),
  },
  {
    name: 'no key, and a body that fails validation (the key is checked first)',
    status: 401,
    code: 'missing_api_key',
    applies: (entry) => entry.method !== 'GET',
    arrange: async () => ({ key: null, body: { nonsense: [1, 2, 3] } }),
  },
  { name: 'a malformed key', status: 401, code: 'malformed_api_key', arrange: async () => ({ key: 'pk_short' }), check: challenged },
  {
    name: 'an unknown key',
    status: 401,
    code: 'invalid_api_key',
    arrange: async () => ({ key: 'sk_' + 'u'.repeat(32) }),
    check: challenged,
  },
  {
    name: 'a revoked key holding the scope',
    status: 401,
    code: 'invalid_api_key',
    arrange: async (w, entry) => {
      const { key, record } = await seedKey(service, w.businessId, { type: 'private', scopes: granting(entry) })
      await service.services.keys.revoke(w.businessId, record.id, TEST_AUTHOR)
      return { key }
    },
    check: challenged,
  },
  {
    name: 'an expired key holding the scope',
    status: 401,
    code: 'expired_api_key',
    arrange: async (w, entry) => {
      const expiresAt = new Date(Date.now() + 60 * 60_000).toISOString()
      const { key } = await seedKey(service, w.businessId, { type: 'private', scopes: granting(entry), expiresAt })
      skew = 2 * 60 * 60_000
      return { key }
    },
    check: challenged,
  },
  {
    name: 'a public key from an origin it does not allow',
    status: 403,
    code: 'origin_not_allowed',
    arrange: async (w, entry) => {
      const scopes = entry.public && entry.scope ? [entry.scope] : [...PUBLIC_KEY_SCOPES]
      const { key } = await seedKey(service, w.businessId, { scopes, allowedOrigins: ['example.com'] })
      return { key, origin: REFUSED_ORIGIN }
    },
    check: (_, __, message) => expect(message).toContain(REFUSED_ORIGIN),
  },
  {
    name: 'a public key holding every public scope, on a private route',
    status: 403,
    code: 'public_key_not_allowed',
    applies: (entry) => !entry.public,
    arrange: async (w) => ({
      key: (await seedKey(service, w.businessId, { scopes: [...PUBLIC_KEY_SCOPES], allowedOrigins: ['example.com'] })).key,
    }),
  },
  {
    name: 'a private key holding every other scope',
    status: 403,
    code: 'insufficient_scope',
    applies: (entry) => entry.scope !== null,
    arrange: async (w, entry) => ({
      key: (await seedKey(service, w.businessId, { type: 'private', scopes: SCOPES.filter((s) => s !== entry.scope) })).key,
    }),
    check: (response, entry) => expect(response.headers.get('www-authenticate')).toContain(`scope="${entry.scope}"`),
  },
  {
    name: 'a public key holding every other public scope',
    status: 403,
    code: 'insufficient_scope',
    applies: (entry) => entry.public && entry.scope !== null,
    arrange: async (w, entry) => ({
      key: (
        await seedKey(service, w.businessId, {
          scopes: PUBLIC_KEY_SCOPES.filter((s) => s !== entry.scope),
          allowedOrigins: ['example.com'],
        })
      ).key,
    }),
    check: (response, entry) => expect(response.headers.get('www-authenticate')).toContain(`scope="${entry.scope}"`),
  },
  {
    name: 'a key whose budget the valid request used up',
    status: 429,
    code: 'rate_limited',
    arrange: async (w, entry) => {
      const { key } = await seedKey(service, w.businessId, {
        type: 'private',
        scopes: granting(entry),
        rateLimit: { limit: 1, windowSeconds: 60 },
      })
      expect((await send(entry, w, key, ORIGIN)).status).toBe(entry.status)
      return { key }
    },
    check: (response) => expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1),
  },
]

describe.each(ROUTE_TABLE.map((entry) => [routeName(entry), entry] as const))('%s', (_, entry) => {
  test(`the valid request with a private key holding only ${granting(entry)[0]}: ${entry.status}`, async () => {
    const w = await seedWorld(service)
    const { key } = await seedKey(service, w.businessId, { type: 'private', scopes: granting(entry) })
    const response = await send(entry, w, key, ORIGIN)
    expect(response.status, await response.clone().text()).toBe(entry.status)
    expect(reached).toEqual([routeName(entry)])
  })

  if (entry.public) {
    test(`the valid request with a public key holding only ${granting(entry)[0]}, from an allowed origin: ${entry.status}`, async () => {
      const w = await seedWorld(service)
      const scopes = entry.scope ? [entry.scope] : ['ANALYTICS_WRITE']
      const { key } = await seedKey(service, w.businessId, { scopes, allowedOrigins: ['example.com'] })
      const response = await send(entry, w, key, ORIGIN)
      expect(response.status, await response.clone().text()).toBe(entry.status)
      expect(reached).toEqual([routeName(entry)])
    })
  }

  test('a CORS preflight, without a key: 204 naming the method', async () => {
    const w = await seedWorld(service)
    const response = await call(service, entry.request(w).path, {
      method: 'OPTIONS',
      origin: ORIGIN,
      headers: { 'access-control-request-method': entry.method },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    expect(response.headers.get('access-control-allow-methods')!.split(', ')).toContain(entry.method)
    expect(reached).toEqual([])
  })

  for (const refusal of REFUSALS.filter((r) => r.applies?.(entry) ?? true)) {
    test(`${refusal.name}: ${refusal.status} ${refusal.code}, the handler never runs, nothing is written`, async () => {
      const w = await seedWorld(service)
      const sent = await refusal.arrange(w, entry)
      // lastUsedAt is kept to the minute: past it, any use of a key would be written.
      skew += 2 * 60_000
      await service.services.lastUsed.flush()
      // An erasure the arrangement asked for is deleted in the background: let it finish.
      await service.services.erasures.idle()
      const before = await storedState()
      reached.length = 0

      const response = await send(entry, w, sent.key, sent.origin ?? ORIGIN, sent.body)
      const error = await errorOf(response)
      expect({ status: response.status, code: error.code }).toEqual({ status: refusal.status, code: refusal.code })
      expect(error.requestId).toBe(response.headers.get('x-request-id')!)
      // Page code reads refusals too (CORS).
      expect(response.headers.get('access-control-allow-origin')).toBe(sent.origin ?? ORIGIN)
      refusal.check?.(response, entry, error.message)
      expect(reached).toEqual([])
      await service.services.lastUsed.flush()
      expect(await storedState()).toEqual(before)
    })
  }
})
