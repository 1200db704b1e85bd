import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { PUBLIC_KEY_SCOPES, SCOPES } from '../../src/access/scopes.ts'
import { deepJson, hostileQueryValue, hostileString, mutatedBody, RUNS } from '../support/hostile.ts'
import { declaredApiRoutes, ROUTE_TABLE, routeName, seedWorld, type RouteEntry, type World } from '../support/route-table.ts'
import { admin, call, seedKey, testService } from '../support/service.ts'
import { flushBackgroundWrites } from '../support/background.ts'
import { storedState } from '../support/stored-state.ts'

/**
 * Hostile input at every input surface of /api/v0 and /admin/v0: whatever arrives, the
 * answer is never a 5xx, and a refusal (4xx) writes nothing. A counterexample prints the
 * request that broke it. The /api/v0 surfaces come from the route table and the routes'
 * declared query schemas, so a new route or parameter is fuzzed the day it lands.
 */

const ORIGIN = 'https://www.example.com'

interface FuzzWorld extends World {
  /** A public key holding every public scope, allowing ORIGIN. */
  pk: string
  /** A private key holding every scope. */
  sk: string
  skId: string
}

async function world(): Promise<FuzzWorld> {
  const w = await seedWorld(await testService())
  const pk = await seedKey(w.service, w.businessId, { scopes: [...PUBLIC_KEY_SCOPES], allowedOrigins: ['example.com'] })
  const sk = await seedKey(w.service, w.businessId, { type: 'private', scopes: [...SCOPES] })
  return { ...w, pk: pk.key, sk: sk.key, skId: sk.record.id }
}

/** Sends one request; asserts no 5xx, and that a refusal changed no stored row. */
async function survives(send: () => Promise<Response>): Promise<void> {
  // What earlier accepted requests left queued (lastUsedAt) is written first, so that no
  // background write lands between the two snapshots.
  await flushBackgroundWrites()
  const before = await storedState()
  const response = await send()
  const text = await response.text()
  expect(response.status, text).toBeLessThan(500)
  if (response.status >= 400) {
    expect(JSON.parse(text).error.code).toBeString()
    expect(await storedState()).toEqual(before)
  }
}

function fuzz<T>(arbitrary: fc.Arbitrary<T>, send: (value: T) => Promise<Response>): Promise<void> {
  return fc.assert(
    fc.asyncProperty(arbitrary, (value) => survives(() => send(value))),
    { numRuns: RUNS },
  )
}

type Body = Record<string, unknown>

/** Valid bodies beside the table's, so mutations also start from every field and from the batch forms. */
const MORE_BODIES: Record<string, (w: World) => Body[]> = {
  'POST /api/v0/analytics': () => [
    {
      eventType: 'page_view',
      url: 'https://www.example.com/',
      referrer: '',
      anonymousId: 'a',
      personId: 'p',
      properties: { plan: 'pro' },
      timestamp: new Date().toISOString(),
    },
    { events: [{ eventType: 'click', properties: { n: 1 } }] },
  ],
  'POST /api/v0/audience/people': () => [
    { email: 'ada@example.com', externalId: 'u1', firstName: 'Ada', lastName: 'L', properties: { plan: 'pro' } },
    { people: [{ email: 'b@example.com' }] },
  ],
  'POST /api/v0/audience/companies': () => [
    { domain: 'example.com', externalId: 'c1', name: 'Acme', properties: { size: 3 } },
    { companies: [{ domain: 'b.io' }] },
  ],
  'POST /api/v0/audience/lists': () => [{ slug: 'vip', name: 'VIP', description: 'd' }],
  'DELETE /api/v0/audience/lists/:slug/people': () => [{ people: [{ externalId: 'u1' }] }],
  'POST /api/v0/blog/blogs': (w) => [
    {
      slug: 'post',
      title: 'T',
      excerpt: 'e',
      content: 'c',
      authorId: w.authorId,
      tags: ['news'],
      status: 'published',
      publishedAt: '2026-01-01T00:00:00Z',
    },
  ],
  'PATCH /api/v0/blog/blogs/:id': () => [{ title: 'T2', publishedAt: '2026-01-01T00:00:00Z', tags: [] }],
  'POST /api/v0/blog/authors': () => [{ slug: 'bob', name: 'Bob', bio: 'b' }],
  'PATCH /api/v0/blog/authors/:id': () => [{ name: 'Ada L', bio: null }],
  'POST /api/v0/memory': () => [{ title: 't', content: 'c', metadata: { a: 1 } }],
  'PATCH /api/v0/memory/:id': () => [{ content: 'c2', metadata: { b: 2 } }],
}

const withBody = ROUTE_TABLE.filter((entry) => entry.method !== 'GET' && entry.request({} as World).body !== undefined)

/** Every route with a body: with a private key, and public routes with a public key too (what a page sends). */
const bodySurfaces = withBody.flatMap((entry) =>
  (entry.public ? (['pk', 'sk'] as const) : (['sk'] as const)).map((key) => ({ entry, key })),
)

describe('hostile bodies on /api/v0: never a 5xx, a refusal writes nothing', () => {
  for (const { entry, key } of bodySurfaces) {
    test(`${routeName(entry)} (${key === 'pk' ? 'public' : 'private'} key)`, async () => {
      const w = await world()
      const request = entry.request(w)
      const valid = [request.body as Body, ...(MORE_BODIES[routeName(entry)]?.(w) ?? [])]
      await fuzz(fc.oneof(...valid.map(mutatedBody)), (body) =>
        call(w.service, request.path, { method: entry.method, key: w[key], origin: ORIGIN, body, headers: request.headers }),
      )
    })
  }

  test('every body route of the table is fuzzed, with its own and the extra valid bodies', () => {
    expect(withBody.length).toBeGreaterThan(0)
    const names = withBody.map(routeName)
    expect(Object.keys(MORE_BODIES).filter((name) => !names.includes(name))).toEqual([])
  })
})

const declared = declaredApiRoutes((await testService()).app)
const pathOf = (entry: RouteEntry, w: World) => entry.request(w).path.replace(/\?.*$/, '')

/** GET routes with a query schema, and the parameters it declares. */
const querySurfaces = ROUTE_TABLE.filter((entry) => entry.method === 'GET').flatMap((entry) => {
  const names = declared.find((r) => routeName(r) === routeName(entry))?.queryNames ?? []
  return names.length > 0 ? [{ entry, names }] : []
})

/** A cursor: random base64url, or base64url of hostile JSON (dates past every range, huge ranks). */
const hostileCursor = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), maxLength: 300 }),
  fc
    .oneof(
      fc.tuple(hostileString, fc.constantFrom('00000000-0000-4000-8000-000000000000')),
      fc.tuple(fc.constant('q'), hostileString, fc.double(), fc.constantFrom('00000000-0000-4000-8000-000000000000')),
      fc.tuple(hostileString),
      fc.constantFrom(
        ['+275760-09-13T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'],
        ['0000-01-01T00:00:00Z', '00000000-0000-4000-8000-000000000000'],
      ),
    )
    .map((value) => Buffer.from(JSON.stringify(value)).toString('base64url')),
)

describe('hostile query strings and cursors on /api/v0: never a 5xx', () => {
  for (const { entry, names } of querySurfaces) {
    test(`${routeName(entry)} (${names.join(', ')})`, async () => {
      const w = await world()
      const query = fc.array(fc.tuple(fc.constantFrom(...names), fc.oneof(hostileQueryValue, hostileCursor)), {
        minLength: 1,
        maxLength: 4,
      })
      await fuzz(query, (pairs) =>
        call(w.service, `${pathOf(entry, w)}?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`, { key: w.sk }),
      )
    })
  }

  test('path parameters of every GET route, one at a time, the others real', async () => {
    const w = await world()
    // Each (route, segment) pair: the valid path with that one segment replaced.
    const slots = ROUTE_TABLE.filter((entry) => entry.method === 'GET').flatMap((entry) =>
      entry.route.split('/').flatMap((segment, at) => (segment.startsWith(':') ? [{ segments: pathOf(entry, w).split('/'), at }] : [])),
    )
    expect(slots.length).toBeGreaterThan(0)
    await fuzz(fc.tuple(fc.constantFrom(...slots), hostileQueryValue), ([{ segments, at }, value]) =>
      call(w.service, segments.map((segment, i) => (i === at ? value : segment)).join('/'), { key: w.sk }),
    )
  })
})

/** Header values as HTTP can carry them (Latin-1, no CR, LF or NUL), and key-like shapes. */
const headerValue = fc.oneof(
  fc.string({
    unit: fc
      .integer({ min: 1, max: 0xff })
      .filter((c) => c !== 10 && c !== 13)
      .map((c) => String.fromCharCode(c)),
    maxLength: 80,
  }),
  fc.constantFrom(
    'Bearer ',
    'bearer  pk_x',
    'Bearer pk_' + 'a'.repeat(32),
    'Bearer sk_' + 'a'.repeat(41),
    'Basic abc',
    '\tBearer x',
    'null',
    'https://example.com.',
    'x'.repeat(8000),
  ),
)

function header(name: string, value: string): Record<string, string> | null {
  try {
    new Headers({ [name]: value })
    return { [name]: value }
  } catch {
    return null
  }
}

describe('hostile headers: never a 5xx', () => {
  for (const name of ['authorization', 'origin', 'content-type']) {
    test(`${name} on POST /api/v0/analytics`, async () => {
      const w = await world()
      const defaults = { authorization: `Bearer ${w.pk}`, origin: ORIGIN, 'content-type': 'application/json' }
      await fuzz(headerValue, (value) =>
        w.service.app.handle(
          new Request('http://localhost/api/v0/analytics', {
            method: 'POST',
            headers: { ...defaults, ...(header(name, value) ?? {}) },
            body: '{"eventType":"x"}',
          }),
        ),
      )
    })
  }

  test('authorization on POST /admin/v0/businesses', async () => {
    const w = await world()
    await fuzz(headerValue, (value) =>
      w.service.app.handle(
        new Request('http://localhost/admin/v0/businesses', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(header('authorization', value) ?? {}) },
          body: '{"name":"Beta"}',
        }),
      ),
    )
  })

  test('Idempotency-Key on a flow trigger', async () => {
    const w = await world()
    await fuzz(headerValue, (value) =>
      call(w.service, `/api/v0/flow/${w.flowId}/trigger`, {
        key: w.pk,
        origin: ORIGIN,
        body: { input: { a: 1 } },
        headers: header('idempotency-key', value) ?? {},
      }),
    )
  })
})

describe('hostile bodies on /admin/v0: never a 5xx, a refusal writes nothing', () => {
  const surfaces: [string, string, (w: FuzzWorld) => string, Record<string, unknown>][] = [
    ['POST', '/businesses', () => '/businesses', { name: 'Beta' }],
    [
      'POST',
      '/businesses/:id/keys',
      (w) => `/businesses/${w.businessId}/keys`,
      {
        type: 'public',
        name: 'Web',
        description: 'd',
        allowedOrigins: ['example.com'],
        scopes: ['ANALYTICS_WRITE'],
        expiresAt: '2099-01-01T00:00:00Z',
        createdBy: 'ops',
      },
    ],
    ['PATCH', '/keys/:id', (w) => `/keys/${w.skId}`, { name: 'Server', description: null, scopes: ['ANALYTICS_READ'], expiresAt: null }],
    ['POST', '/businesses/:id/flows', (w) => `/businesses/${w.businessId}/flows`, { name: 'onboarding' }],
    ['POST', '/businesses/:id/members', (w) => `/businesses/${w.businessId}/members`, { email: 'ops@example.com', role: 'member' }],
  ]
  for (const [method, label, path, valid] of surfaces) {
    test(`${method} ${label}`, async () => {
      const w = await world()
      await fuzz(mutatedBody(valid), (body) => admin(w.service, path(w), { method, body }))
    })
  }

  test('path ids', async () => {
    const w = await world()
    await fuzz(fc.tuple(fc.constantFrom('/keys/', '/businesses/'), hostileQueryValue), ([path, id]) => admin(w.service, `${path}${id}`))
  })

  test('deep nesting, before and after the token check', async () => {
    const w = await world()
    await fuzz(fc.tuple(deepJson, fc.boolean()), ([body, withToken]) =>
      withToken ? admin(w.service, '/businesses', { body }) : call(w.service, '/admin/v0/businesses', { body }),
    )
  })
})
