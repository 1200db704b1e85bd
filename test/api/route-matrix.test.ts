import { describe, expect, test } from 'bun:test'
import { PUBLIC_KEY_SCOPES, SCOPES, type RouteAccess } from '../../src/access/scopes.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// One matrix, every /api/v0 route the app serves (read from the app itself, so a new
// route is covered the day it lands): no key, a malformed key, an unknown key, a public
// key where public keys may not go, and a key without the route's scope.

const service = await testService()
const routes = service.app.routes
  .filter((r) => r.path.startsWith('/api/v0/') && r.method !== 'OPTIONS')
  .map((r) => ({
    method: r.method,
    path: r.path,
    access: (r.hooks.detail as { 'x-access'?: RouteAccess } | undefined)?.['x-access'],
  }))
const name = (r: { method: string; path: string }) => `${r.method} ${r.path}`

function concrete(path: string): string {
  return path
    .replace(/:id|:runId/g, '00000000-0000-4000-8000-000000000000')
    .replace(/:[A-Za-z]+/g, 'some-slug')
    .replace(/\*$/, 'blogs')
}

function send(route: { method: string; path: string }, key: string | null, origin?: string) {
  const hasBody = !['GET', 'HEAD', 'DELETE'].includes(route.method)
  return call(service, concrete(route.path), { method: route.method, key, origin, body: hasBody ? {} : undefined })
}

test('every /api/v0 route declares its access rule', () => {
  expect(routes.length).toBeGreaterThan(0)
  expect(routes.filter((r) => !r.access).map(name)).toEqual([])
})

test('the public set is exactly the contract\'s (section 5)', () => {
  const publicRoutes = routes.filter((r) => r.access?.public).map(name).sort()
  const contract = [
    'POST /api/v0/analytics', 'POST /api/v0/audience/people', 'POST /api/v0/audience/companies',
    'POST /api/v0/audience/lists/:slug/people', 'DELETE /api/v0/audience/lists/:slug/people',
    'POST /api/v0/flow/:id/trigger', 'GET /api/v0/whoami',
  ]
  expect(publicRoutes.filter((r) => !r.startsWith('GET /api/v0/blog/'))).toEqual(contract.sort())
  // GET /api/v0/blog/*: every blog read is public and needs BLOG_READ.
  const blogReads = routes.filter((r) => r.method === 'GET' && r.path.startsWith('/api/v0/blog/'))
  expect(blogReads.length).toBeGreaterThan(0)
  expect(blogReads.filter((r) => !r.access?.public || r.access.scope !== 'BLOG_READ').map(name)).toEqual([])
  for (const route of routes.filter((r) => r.access?.public && r.access.scope)) {
    expect(PUBLIC_KEY_SCOPES).toContain(route.access!.scope!)
  }
})

describe.each(routes)('$method $path', (route) => {
  test('without a key: 401 missing_api_key', async () => {
    const response = await send(route, null)
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('missing_api_key')
  })

  test('with a malformed key: 401 malformed_api_key', async () => {
    expect((await errorOf(await send(route, 'pk_short'))).code).toBe('malformed_api_key')
  })

  test('with an unknown key: 401 invalid_api_key', async () => {
    expect((await errorOf(await send(route, 'sk_' + 'u'.repeat(32)))).code).toBe('invalid_api_key')
  })

  if (!route.access?.public) {
    test('with a public key holding every public scope: 403 public_key_not_allowed', async () => {
      const businessId = await seedBusiness(service)
      const { key } = await seedKey(service, businessId, { scopes: [...PUBLIC_KEY_SCOPES], allowedOrigins: ['*'] })
      expect((await errorOf(await send(route, key, 'https://example.com'))).code).toBe('public_key_not_allowed')
    })
  }

  if (route.access?.scope) {
    test('with a private key holding every other scope: 403 insufficient_scope', async () => {
      const businessId = await seedBusiness(service)
      const others = SCOPES.filter((s) => s !== route.access!.scope)
      const { key } = await seedKey(service, businessId, { type: 'private', scopes: others })
      const response = await send(route, key)
      expect(response.status).toBe(403)
      expect(response.headers.get('www-authenticate')).toContain(`scope="${route.access!.scope}"`)
    })
  }
})
