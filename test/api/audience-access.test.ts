import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { audienceListMembers, audienceLists, people } from '../../db/schema/index.ts'
import { PUBLIC_KEY_SCOPES } from '../../src/access/scopes.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

/**
 * The refusal matrix for every analytics and audience route: no key, a key without the
 * route's scope, a public key on a private route, a public key from a refused origin. A
 * refused request writes nothing, and a bad body from an unknown caller still answers 401.
 */
interface Route {
  method: string
  /** `:id` is replaced by a stored person's id. */
  path: string
  pattern: string
  scope: string
  public: boolean
  body?: unknown
}

const ROUTES: Route[] = [
  { method: 'POST', path: '/api/v0/analytics', pattern: '/api/v0/analytics', scope: 'ANALYTICS_WRITE', public: true, body: { eventType: 'page_view' } },
  { method: 'GET', path: '/api/v0/analytics', pattern: '/api/v0/analytics', scope: 'ANALYTICS_READ', public: false },
  { method: 'POST', path: '/api/v0/audience/people', pattern: '/api/v0/audience/people', scope: 'AUDIENCE_PERSON_WRITE', public: true, body: { email: 'new@x.com' } },
  { method: 'GET', path: '/api/v0/audience/people', pattern: '/api/v0/audience/people', scope: 'AUDIENCE_PERSON_READ', public: false },
  { method: 'GET', path: '/api/v0/audience/people/:id', pattern: '/api/v0/audience/people/:id', scope: 'AUDIENCE_PERSON_READ', public: false },
  { method: 'DELETE', path: '/api/v0/audience/people/:id', pattern: '/api/v0/audience/people/:id', scope: 'AUDIENCE_PERSON_WRITE', public: false },
  { method: 'POST', path: '/api/v0/audience/companies', pattern: '/api/v0/audience/companies', scope: 'AUDIENCE_COMPANY_WRITE', public: true, body: { domain: 'new.io' } },
  { method: 'GET', path: '/api/v0/audience/companies', pattern: '/api/v0/audience/companies', scope: 'AUDIENCE_COMPANY_READ', public: false },
  { method: 'GET', path: `/api/v0/audience/companies/${crypto.randomUUID()}`, pattern: '/api/v0/audience/companies/:id', scope: 'AUDIENCE_COMPANY_READ', public: false },
  { method: 'POST', path: '/api/v0/audience/lists', pattern: '/api/v0/audience/lists', scope: 'AUDIENCE_LIST_WRITE', public: false, body: { slug: 'other', name: 'Other' } },
  { method: 'GET', path: '/api/v0/audience/lists', pattern: '/api/v0/audience/lists', scope: 'AUDIENCE_LIST_READ', public: false },
  { method: 'GET', path: '/api/v0/audience/lists/news', pattern: '/api/v0/audience/lists/:slug', scope: 'AUDIENCE_LIST_READ', public: false },
  { method: 'GET', path: '/api/v0/audience/lists/news/people', pattern: '/api/v0/audience/lists/:slug/people', scope: 'AUDIENCE_LIST_READ', public: false },
  { method: 'POST', path: '/api/v0/audience/lists/news/people', pattern: '/api/v0/audience/lists/:slug/people', scope: 'AUDIENCE_LIST_WRITE', public: true, body: { people: [{ email: 'new@x.com' }] } },
  { method: 'DELETE', path: '/api/v0/audience/lists/news/people', pattern: '/api/v0/audience/lists/:slug/people', scope: 'AUDIENCE_LIST_WRITE', public: true, body: { people: [{ email: 'member@x.com' }] } },
]

const ORIGIN = 'https://example.com'

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const { db } = await testDatabase()
  const [person] = await db.insert(people).values({ businessId, email: 'member@x.com' }).returning()
  const [list] = await db.insert(audienceLists).values({ businessId, slug: 'news', name: 'News' }).returning()
  await db.insert(audienceListMembers).values({ listId: list!.id, personId: person!.id })
  return { service, businessId, personId: person!.id }
}

async function totals() {
  const [row] = await queryRows<Record<string, number>>(
    (await testDatabase()).db,
    sql`select (select count(*)::int from people) as people, (select count(*)::int from companies) as companies,
               (select count(*)::int from audience_lists) as lists, (select count(*)::int from audience_list_members) as members,
               (select count(*)::int from analytics_events) as events`,
  )
  return row!
}

function request(s: Awaited<ReturnType<typeof setup>>, route: Route, key: string | null, origin?: string, body = route.body) {
  return call(s.service, route.path.replace(':id', s.personId), { method: route.method, key, origin, body })
}

const name = (route: Route) => `${route.method} ${route.pattern}`

describe.each(ROUTES.map((route) => [name(route), route] as const))('%s', (_, route) => {
  test('without a key: 401 missing_api_key, nothing written', async () => {
    const s = await setup()
    const before = await totals()
    const response = await request(s, route, null, ORIGIN)
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('missing_api_key')
    expect(response.headers.get('www-authenticate')).toStartWith('Bearer')
    expect(await totals()).toEqual(before)
  })

  if (route.body !== undefined) {
    test('an invalid body without a key: 401, not 400 (the key is checked first)', async () => {
      const s = await setup()
      const response = await request(s, route, null, ORIGIN, { nonsense: [1, 2, 3] })
      expect(response.status).toBe(401)
    })
  }

  test(`a ${route.public ? 'public' : 'private'} key without ${route.scope}: 403 insufficient_scope, nothing written`, async () => {
    const s = await setup()
    const held = route.public ? PUBLIC_KEY_SCOPES.filter((scope) => scope !== route.scope) : ['MEMORY_READ']
    const { key } = await seedKey(s.service, s.businessId, { type: route.public ? 'public' : 'private', scopes: held })
    const before = await totals()
    const response = await request(s, route, key, route.public ? ORIGIN : undefined)
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
    expect(response.headers.get('www-authenticate')).toContain(`scope="${route.scope}"`)
    expect(await totals()).toEqual(before)
  })

  if (route.public) {
    test('a public key from an origin it does not allow: 403 origin_not_allowed, nothing written', async () => {
      const s = await setup()
      const { key } = await seedKey(s.service, s.businessId, { scopes: [route.scope] })
      const before = await totals()
      const response = await request(s, route, key, 'https://example.com.evil.io')
      expect(response.status).toBe(403)
      expect((await errorOf(response)).code).toBe('origin_not_allowed')
      expect(await totals()).toEqual(before)
    })
  } else {
    test('a public key, whatever it holds: 403 public_key_not_allowed, nothing written', async () => {
      const s = await setup()
      const { key } = await seedKey(s.service, s.businessId, { scopes: [...PUBLIC_KEY_SCOPES] })
      const before = await totals()
      const response = await request(s, route, key, ORIGIN)
      expect(response.status).toBe(403)
      expect((await errorOf(response)).code).toBe('public_key_not_allowed')
      expect(await totals()).toEqual(before)
    })
  }
})

test('the matrix covers every analytics and audience route', async () => {
  const s = await setup()
  const served = s.service.app.routes
    .filter((r) => /^\/api\/v0\/(analytics|audience)/.test(r.path) && r.method !== 'OPTIONS' && r.method !== 'HEAD')
    .map((r) => `${r.method} ${r.path}`)
    .sort()
  expect(served).toEqual([...new Set(ROUTES.map(name))].sort())
})
