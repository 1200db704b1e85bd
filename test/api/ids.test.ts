import { describe, expect, test } from 'bun:test'
import { SCOPES } from '../../src/access/scopes.ts'
import type { Service } from '../../src/app.ts'
import { IdOrSlugParams } from '../../src/areas/blog/model.ts'
import { memberOf, postForm } from '../dashboard/support.ts'
import { ADMIN_TOKEN, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// One uuid rule (src/shared/uuid.ts) on every route that takes an id: the forms PostgreSQL
// would also read (urn:uuid:, braces, no hyphens) and near misses are refused before the
// database, alike on every route; either case of the hex digits is the same id.

/** A valid body for every route with an id and a body schema: the body must not be what is refused. */
const BODIES: Record<string, unknown> = {
  'POST /admin/v0/businesses/:id/members': { email: 'ada@example.com', role: 'member' },
  'POST /admin/v0/businesses/:id/keys': { type: 'private', name: 'Backend', scopes: ['MEMORY_READ'], createdBy: 'ops' },
  'PATCH /admin/v0/keys/:id': { name: 'Renamed' },
  'POST /admin/v0/keys/:id/roll': { graceSeconds: 60 },
  'POST /admin/v0/businesses/:id/flows': { name: 'Signup' },
  'PATCH /admin/v0/businesses/:id': { name: 'Renamed' },
  'POST /admin/v0/businesses/:id/erasures': { personId: 'user-1' },
  'PATCH /api/v0/blog/blogs/:id': { title: 'Hello' },
  'PATCH /api/v0/blog/authors/:id': { name: 'Ada' },
  'PATCH /api/v0/blog/tags/:id': { name: 'News' },
  'PATCH /api/v0/memory/:id': { title: 'Notes' },
  'POST /api/v0/flow/:id/trigger': {},
  'POST /admin/v0/businesses/:id/webhooks': { url: 'https://example.com/hooks', events: ['key.created'] },
  'PATCH /admin/v0/businesses/:id/webhooks/:endpointId': { description: 'Renamed' },
}

const routes = (await testService()).app.routes
  .filter((route) => /\/:(id|\w+Id)\b/.test(route.path))
  .map((route) => ({
    method: route.method,
    path: route.path,
    idParams: [...route.path.matchAll(/:(id|\w+Id)\b/g)].map((m) => m[1]!),
    hasBody: route.hooks.body !== undefined,
    // `/blog/blogs/:id` and the like read any non-UUID as a slug.
    idOrSlug: route.hooks.params === IdOrSlugParams,
  }))

type IdRoute = (typeof routes)[number]

const malformed = (id: string): [string, string][] => [
  ['urn:uuid: form', `urn:uuid:${id}`],
  ['braces', `{${id}}`],
  ['35 characters', id.slice(0, 35)],
  ['no hyphens', id.replaceAll('-', '')],
]

interface Caller {
  service: Service
  send(route: IdRoute, values: Record<string, string>): Promise<Response>
}

/** `forDashboard`: also a signed-in member (a password hash: half a second, so only when needed). */
async function caller(forDashboard = false): Promise<Caller> {
  const service = await testService()
  const businessId = await seedBusiness(service, 'Keys')
  const { key } = await seedKey(service, businessId, {
    type: 'private',
    scopes: [...SCOPES],
    rateLimit: { limit: 1_000_000, windowSeconds: 1 },
  })
  const session = forDashboard ? (await memberOf(service, 'Members')).session : null
  return {
    service,
    send(route, values) {
      const path = route.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(values[name] ?? crypto.randomUUID()))
      if (path.startsWith('/dashboard/')) {
        if (session === null) throw new Error('caller(true) signs a member in for the dashboard routes')
        if (route.method === 'POST') return postForm(service, path, { csrf: session.csrf }, { cookie: session.cookie })
        return call(service, path, { headers: { cookie: session.cookie } })
      }
      const headers = { authorization: `Bearer ${path.startsWith('/admin/') ? ADMIN_TOKEN : key}` }
      const body = route.hasBody ? BODIES[`${route.method} ${route.path}`] : undefined
      return call(service, path, { method: route.method, headers, body })
    },
  }
}

async function outcome(response: Response): Promise<{ status: number; code?: string }> {
  const type = response.headers.get('content-type') ?? ''
  if (!type.includes('json')) return { status: response.status }
  const body = (await response.json()) as { error?: { code: string } }
  return { status: response.status, code: body.error?.code }
}

test('the table has a valid body for every route with an id and a body', () => {
  const missing = routes
    .filter((route) => route.hasBody && !route.path.startsWith('/dashboard/'))
    .map((route) => `${route.method} ${route.path}`)
    .filter((name) => !(name in BODIES))
  expect(missing).toEqual([])
  expect(routes.length).toBeGreaterThan(30)
})

describe.each(routes.map((route) => [`${route.method} ${route.path}`, route] as const))('%s', (_, route) => {
  test.each(route.idParams)('a malformed :%s is refused before the database, like on every route', async (param) => {
    const { send } = await caller(route.path.startsWith('/dashboard/'))
    const id = crypto.randomUUID()
    for (const [form, value] of malformed(id)) {
      const response = await send(route, { [param]: value })
      if (route.path.startsWith('/dashboard/')) {
        expect({ form, status: response.status }).toEqual({ form, status: 404 })
      } else if (route.idOrSlug && /^[a-z0-9-]+$/.test(value)) {
        // Not a UUID, so a slug: one that no record has.
        expect({ form, ...(await outcome(response)) }).toEqual({ form, status: 404, code: 'not_found' })
      } else {
        expect({ form, status: response.status }).toEqual({ form, status: 400 })
        const error = await errorOf(response)
        expect(error.code).toBe('invalid_request')
        expect(error.message).toContain(`"${param}"`)
      }
    }
  })

  test.each(route.idParams)('an upper-case :%s, or one of another UUID version, is answered like a lower-case one', async (param) => {
    const { send } = await caller(route.path.startsWith('/dashboard/'))
    const id = crypto.randomUUID()
    const lower = await outcome(await send(route, { [param]: id }))
    const upper = await outcome(await send(route, { [param]: id.toUpperCase() }))
    // PostgreSQL reads any version; so does the rule (no validator's idea of "uuid" on top).
    const version0 = await outcome(await send(route, { [param]: `${id.slice(0, 14)}0${id.slice(15)}` }))
    expect(upper).toEqual(lower)
    expect(version0).toEqual(lower)
    expect(lower.status).not.toBe(400)
  })
})

describe('an upper-case id finds its record', () => {
  test('on the admin API', async () => {
    const { service } = await caller()
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId)
    const response = await call(service, `/admin/v0/keys/${record.id.toUpperCase()}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { id: string }).id).toBe(record.id)
  })

  test('in the dashboard', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { name: 'Storefront' })
    const response = await call(service, `/dashboard/settings/developers/api-keys/${record.id.toUpperCase()}`, {
      headers: { cookie: session.cookie },
    })
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('Storefront')
  })
})
