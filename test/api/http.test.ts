import { describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { openDatabase } from '../../db/client.ts'
import { ADMIN_TOKEN, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'
import { silentLogger } from '../../src/observability/log.ts'

// The HTTP envelope: CORS, request ids, 404s, health, 503.

describe('CORS preflight', () => {
  test("OPTIONS answers 204 without a key, echoing the Origin, with the route's methods", async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/whoami', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe('https://shop.example')
    expect(response.headers.get('access-control-allow-methods')).toBe('GET, HEAD')
    const allowed = response.headers.get('access-control-allow-headers')!.toLowerCase()
    expect(allowed).toContain('authorization')
    expect(allowed).toContain('content-type')
    expect(response.headers.get('access-control-max-age')).toBe('7200')
    expect(response.headers.get('vary')).toContain('Origin')
    expect(response.headers.get('access-control-allow-credentials')).toBeNull()
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
  })

  test('an unknown path is preflighted too, so the page can read the 404 that follows', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/analytics/web', { method: 'OPTIONS', headers: { origin: 'https://shop.example' } })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-methods')).toContain('POST')
  })
})

describe('CORS on answers', () => {
  test('success and error answers echo the Origin and expose the request id, never credentials', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId)
    for (const [origin, status] of [
      ['https://www.example.com', 200],
      ['https://evil.io', 403],
    ] as const) {
      const response = await call(service, '/api/v0/whoami', { key, origin })
      expect(response.status).toBe(status)
      expect(response.headers.get('access-control-allow-origin')).toBe(origin)
      expect(response.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
      expect(response.headers.get('access-control-expose-headers')).toContain('Retry-After')
      expect(response.headers.get('vary')).toBe('Origin')
      expect(response.headers.get('access-control-allow-credentials')).toBeNull()
    }
  })

  test('a 401 without a key echoes the Origin too', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/whoami', { origin: 'https://www.example.com' })
    expect(response.status).toBe(401)
    expect(response.headers.get('access-control-allow-origin')).toBe('https://www.example.com')
  })

  test('non-API answers carry no CORS headers', async () => {
    const service = await testService()
    const response = await call(service, '/healthz', { origin: 'https://www.example.com' })
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('request ids', () => {
  // API routes stamp in the chain's first hook, other surfaces in one local hook, and
  // failures before any hook in the error renderer: every kind of answer is covered here.
  const answers: [string, string, RequestInit][] = [
    ['health', '/healthz', {}],
    ['readiness', '/readyz', {}],
    ['API reference', '/openapi', {}],
    ['tracking snippet', '/sdk/v0.js', {}],
    ['dashboard redirect', '/dashboard', {}],
    ['dashboard page', '/dashboard/sign-in', {}],
    ['unknown path', '/nothing', {}],
    ['unknown API path', '/api/v0/nothing', {}],
    ['preflight', '/api/v0/whoami', { method: 'OPTIONS', headers: { origin: 'https://x.io' } }],
    [
      'admin success',
      '/admin/v0/businesses',
      { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: '{"name":"A"}' },
    ],
    ['admin refusal', '/admin/v0/businesses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"A"}' }],
    [
      'admin bad JSON',
      '/admin/v0/businesses',
      { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: '{bad' },
    ],
    ['API refusal before parsing', '/api/v0/analytics', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' }],
  ]
  test.each(answers)('the %s answer carries X-Request-Id', async (_, path, init) => {
    const service = await testService()
    const response = await service.app.handle(new Request(`http://localhost${path}`, init))
    expect(response.headers.get('x-request-id')).toMatch(/^req_[A-Za-z0-9_-]+$/)
  })

  test('request ids differ from one answer to the next', async () => {
    const service = await testService()
    const ids = new Set<string | null>()
    for (let i = 0; i < 20; i++) ids.add((await call(service, '/healthz')).headers.get('x-request-id'))
    expect(ids.size).toBe(20)
  })
})

describe('not found', () => {
  test('an unknown route answers 404 not_found in the envelope', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/nothing-here')
    expect(response.status).toBe(404)
    const error = await errorOf(response)
    expect(error.code).toBe('not_found')
    expect(error.requestId).toBe(response.headers.get('x-request-id')!)
  })

  test.each([
    ['/api/v0/analytics/web', 'POST /api/v0/analytics'],
    ['/api/v0/people', 'POST /api/v0/audience/people'],
  ])("the seed's variant path %s answers 404 naming %s", async (path, canonical) => {
    const service = await testService()
    const response = await call(service, path, { method: 'POST', body: { eventType: 'page_view' } })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).message).toContain(canonical)
  })
})

describe('health', () => {
  test('/healthz and /readyz answer 200 without a key while the database answers', async () => {
    const service = await testService()
    expect((await call(service, '/healthz')).status).toBe(200)
    const ready = await call(service, '/readyz')
    expect(ready.status).toBe(200)
    expect(ready.headers.get('x-request-id')).toMatch(/^req_/)
  })
})

describe('database down', () => {
  async function deadService() {
    // Port 9 (discard) has nothing listening on loopback: every query fails to connect.
    const database = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:9/none', dataDir: 'memory://' })
    return { database, service: createApp({ database, adminToken: ADMIN_TOKEN, logger: silentLogger }) }
  }

  test('/readyz answers 503 while /healthz still answers 200', async () => {
    const { database, service } = await deadService()
    expect((await call(service, '/healthz')).status).toBe(200)
    const ready = await call(service, '/readyz')
    expect(ready.status).toBe(503)
    expect(ready.headers.get('retry-after')).toBe('5')
    await database.close()
  })

  test('an API request answers 503 unavailable with Retry-After', async () => {
    const { database, service } = await deadService()
    const response = await call(service, '/api/v0/whoami', { key: 'sk_' + 'd'.repeat(32) })
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect((await errorOf(response)).code).toBe('unavailable')
    await database.close()
  })
})

describe('API reference', () => {
  test("GET /openapi documents the routes, the bearer scheme, the error shape and each route's scope", async () => {
    const service = await testService()
    const response = await call(service, '/openapi')
    expect(response.status).toBe(200)
    const doc = await response.json()
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message', 'requestId'])
    expect(doc.paths['/api/v0/whoami'].get['x-access']).toEqual({ scope: null, public: true })
    expect(doc.paths['/admin/v0/businesses/{id}/keys'].post.requestBody.content['application/json'].schema.required).toContain('scopes')
    expect(doc.paths['/api/v0/analytics'].post.requestBody.content['application/json']).toBeDefined()
  })

  test('GET /docs is a page that renders the reference with a script the service serves itself', async () => {
    const service = await testService()
    const page = await call(service, '/docs')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    const html = await page.text()
    // No CDN: every script is a local path.
    const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!)
    expect(scripts).toHaveLength(1)
    expect(scripts[0]).toMatch(/^\/docs\/scalar\.js\?v=[A-Za-z0-9_-]{22}$/)
    expect(html).toContain('url":"/openapi')
    expect(html).not.toContain('https://')

    const script = await call(service, scripts[0]!)
    expect(script.status).toBe(200)
    expect(script.headers.get('content-type')).toStartWith('application/javascript')
    expect(await script.text()).toContain('createApiReference')
  })
})

describe('an answer that fails its own schema', () => {
  test('is a 500 internal_error, not a 400 blaming the client', async () => {
    const { Elysia, t } = await import('elysia')
    const { errorHandling } = await import('../../src/http/errors.ts')
    const app = new Elysia()
      .use(errorHandling(silentLogger))
      .get('/broken', () => ({ count: 'many' }) as unknown as { count: number }, { response: t.Object({ count: t.Integer() }) })
    const response = await app.handle(new Request('http://localhost/broken'))
    expect(response.status).toBe(500)
    const error = await errorOf(response)
    expect(error.code).toBe('internal_error')
    expect(error.message).not.toContain('count')
  })
})
