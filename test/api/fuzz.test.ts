import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import type { Service } from '../../src/app.ts'
import { flows } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { deepJson, hostileQueryValue, hostileString, mutatedBody, RUNS, storedRows } from '../support/hostile.ts'
import { admin, call, seedBusiness, seedKey, testService } from '../support/service.ts'

/**
 * Hostile input at every input surface of /api/v0 and /admin/v0: whatever arrives, the
 * answer is never a 5xx, and a refusal (4xx) writes nothing. A counterexample prints the
 * request that broke it.
 */

const ORIGIN = 'https://www.example.com'
const SCOPES = ['ANALYTICS_READ', 'ANALYTICS_WRITE', 'AUDIENCE_PERSON_READ', 'AUDIENCE_PERSON_WRITE', 'AUDIENCE_COMPANY_READ', 'AUDIENCE_COMPANY_WRITE', 'AUDIENCE_LIST_READ', 'AUDIENCE_LIST_WRITE', 'BLOG_READ', 'BLOG_WRITE', 'MEMORY_READ', 'MEMORY_WRITE', 'FLOW_TRIGGER']
const PUBLIC_SCOPES = ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE', 'AUDIENCE_COMPANY_WRITE', 'AUDIENCE_LIST_WRITE', 'BLOG_READ', 'FLOW_TRIGGER']

interface World {
  service: Service
  businessId: string
  pk: string
  sk: string
  skId: string
  flowId: string
  blogId: string
  authorId: string
  tagId: string
  documentId: string
}

async function world(): Promise<World> {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const pk = await seedKey(service, businessId, { scopes: PUBLIC_SCOPES, allowedOrigins: ['example.com'] })
  const sk = await seedKey(service, businessId, { type: 'private', scopes: SCOPES })
  const [flow] = await (await testDatabase()).db.insert(flows).values({ businessId, name: 'welcome' }).returning()
  const created = async (path: string, body: unknown) => {
    const response = await call(service, path, { key: sk.key, body })
    expect(response.status).toBe(201)
    return ((await response.json()) as { id: string }).id
  }
  await created('/api/v0/audience/lists', { slug: 'news', name: 'News' })
  const authorId = await created('/api/v0/blog/authors', { slug: 'ada', name: 'Ada' })
  const tagId = await created('/api/v0/blog/tags', { slug: 'go', name: 'Go' })
  const blogId = await created('/api/v0/blog/blogs', { slug: 'hello', title: 'Hello', content: 'Hi', authorId, tags: ['go'], status: 'published' })
  const documentId = await created('/api/v0/memory', { content: 'remember this', metadata: { a: 1 } })
  return { service, businessId, pk: pk.key, sk: sk.key, skId: sk.record.id, flowId: flow!.id, blogId, authorId, tagId, documentId }
}

/** Sends one request; asserts no 5xx, and that a refusal changed no stored row. */
async function survives(send: () => Promise<Response>): Promise<void> {
  const before = await storedRows()
  const response = await send()
  const text = await response.text()
  expect(response.status, text).toBeLessThan(500)
  if (response.status >= 400) {
    expect(JSON.parse(text).error.code).toBeString()
    expect(await storedRows()).toBe(before)
  }
}

function fuzz<T>(arbitrary: fc.Arbitrary<T>, send: (value: T) => Promise<Response>): Promise<void> {
  return fc.assert(
    fc.asyncProperty(arbitrary, (value) => survives(() => send(value))),
    { numRuns: RUNS },
  )
}

type KeyKind = 'pk' | 'sk'
interface BodySurface {
  method: string
  path: (w: World) => string
  key: KeyKind
  valid: (w: World) => Record<string, unknown>[]
}

const bodySurfaces: BodySurface[] = [
  {
    method: 'POST',
    path: () => '/api/v0/analytics',
    key: 'pk',
    valid: () => [
      { eventType: 'page_view', url: 'https://www.example.com/', referrer: '', anonymousId: 'a', personId: 'p', properties: { plan: 'pro' }, timestamp: new Date().toISOString() },
      { events: [{ eventType: 'click', properties: { n: 1 } }] },
    ],
  },
  {
    method: 'POST',
    path: () => '/api/v0/audience/people',
    key: 'pk',
    valid: () => [{ email: 'ada@example.com', externalId: 'u1', firstName: 'Ada', lastName: 'L', properties: { plan: 'pro' } }, { people: [{ email: 'b@example.com' }] }],
  },
  {
    method: 'POST',
    path: () => '/api/v0/audience/people',
    key: 'sk',
    valid: () => [{ email: 'ada@example.com', externalId: 'u1', firstName: 'Ada', properties: { plan: 'pro' } }],
  },
  {
    method: 'POST',
    path: () => '/api/v0/audience/companies',
    key: 'sk',
    valid: () => [{ domain: 'example.com', externalId: 'c1', name: 'Acme', properties: { size: 3 } }, { companies: [{ domain: 'b.io' }] }],
  },
  { method: 'POST', path: () => '/api/v0/audience/lists', key: 'sk', valid: () => [{ slug: 'vip', name: 'VIP', description: 'd' }] },
  { method: 'POST', path: () => '/api/v0/audience/lists/news/people', key: 'pk', valid: () => [{ people: [{ email: 'ada@example.com' }] }] },
  { method: 'DELETE', path: () => '/api/v0/audience/lists/news/people', key: 'sk', valid: () => [{ people: [{ externalId: 'u1' }] }] },
  {
    method: 'POST',
    path: () => '/api/v0/blog/blogs',
    key: 'sk',
    valid: (w) => [{ slug: 'post', title: 'T', excerpt: 'e', content: 'c', authorId: w.authorId, tags: ['go'], status: 'published', publishedAt: '2026-01-01T00:00:00Z' }],
  },
  { method: 'PATCH', path: (w) => `/api/v0/blog/blogs/${w.blogId}`, key: 'sk', valid: () => [{ title: 'T2', publishedAt: '2026-01-01T00:00:00Z', tags: [] }] },
  { method: 'POST', path: () => '/api/v0/blog/authors', key: 'sk', valid: () => [{ slug: 'bob', name: 'Bob', bio: 'b' }] },
  { method: 'PATCH', path: (w) => `/api/v0/blog/authors/${w.authorId}`, key: 'sk', valid: () => [{ name: 'Ada L', bio: null }] },
  { method: 'POST', path: () => '/api/v0/blog/tags', key: 'sk', valid: () => [{ slug: 'js', name: 'JS' }] },
  { method: 'PATCH', path: (w) => `/api/v0/blog/tags/${w.tagId}`, key: 'sk', valid: () => [{ name: 'Golang' }] },
  { method: 'POST', path: (w) => `/api/v0/flow/${w.flowId}/trigger`, key: 'pk', valid: () => [{ input: { plan: 'pro' } }] },
  { method: 'POST', path: () => '/api/v0/memory', key: 'sk', valid: () => [{ title: 't', content: 'c', metadata: { a: 1 } }] },
  { method: 'PATCH', path: (w) => `/api/v0/memory/${w.documentId}`, key: 'sk', valid: () => [{ content: 'c2', metadata: { b: 2 } }] },
]

describe('hostile bodies on /api/v0: never a 5xx, a refusal writes nothing', () => {
  for (const surface of bodySurfaces) {
    test(`${surface.method} ${surface.path({ flowId: ':id', blogId: ':id', authorId: ':id', tagId: ':id', documentId: ':id' } as World)} (${surface.key === 'pk' ? 'public' : 'private'} key)`, async () => {
      const w = await world()
      const bodies = fc.oneof(...surface.valid(w).map(mutatedBody))
      await fuzz(bodies, (body) => call(w.service, surface.path(w), { method: surface.method, key: w[surface.key], origin: ORIGIN, body }))
    })
  }
})

const querySurfaces: [string, string[]][] = [
  ['/api/v0/analytics', ['type', 'from', 'to', 'limit', 'cursor']],
  ['/api/v0/audience/people', ['email', 'externalId', 'limit', 'cursor']],
  ['/api/v0/audience/companies', ['domain', 'externalId', 'limit', 'cursor']],
  ['/api/v0/audience/lists', ['limit', 'cursor']],
  ['/api/v0/audience/lists/news/people', ['limit', 'cursor']],
  ['/api/v0/blog/blogs', ['tag', 'author', 'status', 'limit', 'cursor']],
  ['/api/v0/blog/authors', ['limit', 'cursor']],
  ['/api/v0/blog/tags', ['limit', 'cursor']],
  ['/api/v0/memory', ['q', 'limit', 'cursor']],
]

/** A cursor: random base64url, or base64url of hostile JSON (dates past every range, huge ranks). */
const hostileCursor = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), maxLength: 300 }),
  fc
    .oneof(
      fc.tuple(hostileString, fc.constantFrom('00000000-0000-4000-8000-000000000000')),
      fc.tuple(fc.constant('q'), hostileString, fc.double(), fc.constantFrom('00000000-0000-4000-8000-000000000000')),
      fc.tuple(hostileString),
      fc.constantFrom(['+275760-09-13T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'], ['0000-01-01T00:00:00Z', '00000000-0000-4000-8000-000000000000']),
    )
    .map((value) => Buffer.from(JSON.stringify(value)).toString('base64url')),
)

describe('hostile query strings and cursors on /api/v0: never a 5xx', () => {
  for (const [path, names] of querySurfaces) {
    test(`GET ${path}`, async () => {
      const w = await world()
      const query = fc.array(fc.tuple(fc.constantFrom(...names), fc.oneof(hostileQueryValue, hostileCursor)), { minLength: 1, maxLength: 4 })
      await fuzz(query, (pairs) => call(w.service, `${path}?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`, { key: w.sk }))
    })
  }

  test('path parameters: ids and slugs', async () => {
    const w = await world()
    const paths = ['/api/v0/audience/people/', '/api/v0/audience/companies/', '/api/v0/audience/lists/', '/api/v0/blog/blogs/', '/api/v0/blog/tags/', '/api/v0/memory/', `/api/v0/flow/${w.flowId}/runs/`]
    await fuzz(fc.tuple(fc.constantFrom(...paths), hostileQueryValue), ([path, id]) => call(w.service, `${path}${id}`, { key: w.sk }))
  })
})

/** Header values as HTTP can carry them (Latin-1, no CR, LF or NUL), and key-like shapes. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 1, max: 0xff }).filter((c) => c !== 10 && c !== 13).map((c) => String.fromCharCode(c)), maxLength: 80 }),
  fc.constantFrom('Bearer ', 'bearer  pk_x', 'Bearer pk_' + 'a'.repeat(32), 'Bearer sk_' + 'a'.repeat(41), 'Basic abc', '\tBearer x', 'null', 'https://example.com.', 'x'.repeat(8000)),
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
      call(w.service, `/api/v0/flow/${w.flowId}/trigger`, { key: w.pk, origin: ORIGIN, body: { input: { a: 1 } }, headers: header('idempotency-key', value) ?? {} }),
    )
  })
})

describe('hostile bodies on /admin/v0: never a 5xx, a refusal writes nothing', () => {
  const surfaces: [string, string, (w: World) => string, Record<string, unknown>][] = [
    ['POST', '/businesses', () => '/businesses', { name: 'Beta' }],
    ['POST', '/businesses/:id/keys', (w) => `/businesses/${w.businessId}/keys`, { type: 'public', name: 'Web', description: 'd', allowedOrigins: ['example.com'], scopes: ['ANALYTICS_WRITE'], expiresAt: '2099-01-01T00:00:00Z', createdBy: 'ops' }],
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
