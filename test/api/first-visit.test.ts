import { describe, expect, test } from 'bun:test'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'
import { getPage, memberOf } from '../dashboard/support.ts'

// What a newcomer meets before reading anything: the root page, the icon, a wrong method.

describe('GET /', () => {
  test('answers a page that links to the dashboard, the API reference and the OpenAPI document', async () => {
    const service = await testService()
    const response = await call(service, '/')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    const page = await response.text()
    for (const href of ['/dashboard', '/docs', '/openapi']) expect(page).toContain(`<a href="${href}">`)
    expect(page).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">')
  })

  test('its policy lets nothing run and allows only its own style', async () => {
    const service = await testService()
    const response = await call(service, '/')
    const policy = response.headers.get('content-security-policy')!
    expect(policy).toContain("default-src 'none'")
    expect(policy).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/)
    expect(policy).not.toContain('script-src')
    expect(response.headers.get('x-frame-options')).toBe('DENY')
    const style = /<style>([\s\S]*?)<\/style>/.exec(await response.text())![1]!
    const hash = new Bun.CryptoHasher('sha256').update(style).digest('base64')
    expect(policy).toContain(`'sha256-${hash}'`)
  })

  test('every link on it leads to a route the service answers (or /docs, the reference page)', async () => {
    const service = await testService()
    const page = await (await call(service, '/')).text()
    const hrefs = [...page.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!).filter((h) => h !== '/docs')
    const statuses: Record<string, number> = {}
    for (const href of hrefs) statuses[href] = (await call(service, href)).status
    // The dashboard sends a visitor on to its sign-in page.
    expect(statuses).toEqual({ '/favicon.svg': 200, '/dashboard': 303, '/openapi': 200, '/healthz': 200 })
  })
})

describe('the favicon', () => {
  test.each(['/favicon.svg', '/favicon.ico'])('%s answers the SVG icon, cacheable', async (path) => {
    const service = await testService()
    const response = await call(service, path)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('image/svg+xml')
    expect(response.headers.get('cache-control')).toBe('public, max-age=86400')
    const body = await response.text()
    expect(body).toStartWith('<svg xmlns="http://www.w3.org/2000/svg"')
    expect(body).toEndWith('</svg>')
  })

  test('the dashboard pages name it', async () => {
    const service = await testService()
    const page = await (await getPage(service, '/dashboard/sign-in')).text()
    expect(page).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">')
  })
})

describe('a known path with a method it does not take', () => {
  test('PUT /api/v0/whoami answers 405 with Allow and the error envelope', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/whoami', { method: 'PUT' })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    expect(response.headers.get('content-type')).toBe('application/json')
    const error = await errorOf(response)
    expect(error).toEqual({
      code: 'method_not_allowed',
      message: '/api/v0/whoami does not take PUT; it takes GET, HEAD, OPTIONS. The routes are listed at /openapi.',
      requestId: response.headers.get('x-request-id')!,
    })
  })

  test('a path with a parameter takes the methods of its routes', async () => {
    const service = await testService()
    const response = await call(service, `/api/v0/memory/${crypto.randomUUID()}`, { method: 'POST', body: {} })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, HEAD, PATCH, DELETE, OPTIONS')
  })

  test('a browser can read the 405 (the Origin is echoed like on every API answer)', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/analytics', { method: 'PUT', origin: 'https://example.com' })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS')
    expect(response.headers.get('access-control-allow-origin')).toBe('https://example.com')
  })

  test('admin and dashboard paths answer 405 too, without OPTIONS', async () => {
    const service = await testService()
    const admin = await call(service, '/admin/v0/businesses', { method: 'DELETE' })
    expect(admin.status).toBe(405)
    expect(admin.headers.get('allow')).toBe('GET, HEAD, POST')
    expect((await errorOf(admin)).code).toBe('method_not_allowed')
    const signIn = await call(service, '/dashboard/sign-in', { method: 'PUT' })
    expect(signIn.status).toBe(405)
    expect(signIn.headers.get('allow')).toBe('GET, HEAD, POST')
    const dashboard = await call(service, '/dashboard', { method: 'POST' })
    expect(dashboard.status).toBe(405)
    expect(dashboard.headers.get('allow')).toBe('GET, HEAD')
  })

  test('the method is refused before any key is looked at, and nothing is written', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const response = await call(service, '/api/v0/whoami', { method: 'DELETE', key })
    expect(response.status).toBe(405)
    await service.services.lastUsed.flush()
    expect((await service.services.keys.get(null, record.id)).lastUsedAt).toBeNull()
  })

  test('an unknown path still answers 404', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/nothing-here', { method: 'PUT' })
    expect(response.status).toBe(404)
    expect(response.headers.get('allow')).toBeNull()
    expect((await errorOf(response)).code).toBe('not_found')
  })

  test('the CORS preflight names the same methods', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/whoami', { method: 'OPTIONS', origin: 'https://example.com' })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-methods')).toBe('GET, HEAD')
  })
})

describe('the dashboard expiry picker', () => {
  test('starts at tomorrow (UTC): a key expires at 00:00 on the day picked, so today is already past', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const tomorrow = () => {
      const now = new Date()
      return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString().slice(0, 10)
    }
    const before = tomorrow()
    const page = await (await getPage(service, '/dashboard/settings/developers/api-keys/new', session)).text()
    const after = tomorrow()
    const min = /<input id="expires-on" name="expiresOn" type="date" min="([^"]+)"/.exec(page)?.[1]
    // Read on both sides of the request, so a run across midnight UTC still agrees.
    expect([before, after]).toContain(min!)
  })
})
