import { describe, expect, test } from 'bun:test'
import type { Service } from '../../src/app.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// Usage per key, refused origins, scopes' last use, report-only.
const ALLOWED = 'https://www.example.com'
const STRANGER = 'https://evil.example.net'

interface Usage {
  keyId: string
  interval: string
  series: { at: string; accepted: number; refused: Record<string, number> }[]
  refusedOrigins: { origin: string; count: number; lastSeenAt: string; reported: boolean }[]
  scopes: { scope: string; lastUsedAt: string | null }[]
}

async function usageOf(service: Service, keyId: string, query = ''): Promise<Usage> {
  const response = await admin(service, `/keys/${keyId}/usage${query}`)
  expect(response.status).toBe(200)
  return (await response.json()) as Usage
}

/** Totals over the series: accepted, and refused by code. */
function totals(usage: Usage) {
  const refused: Record<string, number> = {}
  let accepted = 0
  for (const point of usage.series) {
    accepted += point.accepted
    for (const [code, n] of Object.entries(point.refused)) refused[code] = (refused[code] ?? 0) + n
  }
  return { accepted, refused }
}

describe('usage per key', () => {
  test('each request of a known key counts once under its final answer; unknown keys count nowhere', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const site = await seedKey(service, businessId, {
      type: 'public',
      scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'],
      rateLimit: { limit: 5, windowSeconds: 3600 },
    })
    const send = (origin: string, path = '/api/v0/whoami', body?: unknown) =>
      call(service, path, { key: site.key, origin, method: body === undefined ? 'GET' : 'POST', body })
    expect((await send(ALLOWED)).status).toBe(200)
    expect((await send(ALLOWED)).status).toBe(200)
    expect((await send(STRANGER)).status).toBe(403)
    expect((await send(ALLOWED, '/api/v0/analytics', { eventType: 'page_view' })).status).toBe(202)
    expect((await send(ALLOWED, '/api/v0/analytics', { eventType: 42 })).status).toBe(400)
    expect((await send(ALLOWED, '/api/v0/analytics', { eventType: 'page_view' })).status).toBe(202)
    expect((await send(ALLOWED, '/api/v0/analytics', { eventType: 'page_view' })).status).toBe(429)
    expect((await call(service, '/api/v0/whoami', { key: 'pk_' + 'z'.repeat(32), origin: ALLOWED })).status).toBe(401)
    await service.services.usage.flush()
    const usage = await usageOf(service, site.record.id)
    expect(usage.interval).toBe('hour')
    // The last 24 hours: 24 periods, or 25 when the range starts mid-hour.
    expect(usage.series.length).toBeGreaterThanOrEqual(24)
    expect(usage.series.length).toBeLessThanOrEqual(25)
    expect(totals(usage)).toEqual({ accepted: 4, refused: { origin_not_allowed: 1, invalid_request: 1, rate_limited: 1 } })
    expect(usage.refusedOrigins).toEqual([{ origin: STRANGER, count: 1, lastSeenAt: expect.any(String), reported: false }])
    const scopes = Object.fromEntries(usage.scopes.map((s) => [s.scope, s.lastUsedAt]))
    expect(scopes.ANALYTICS_WRITE).toEqual(expect.any(String))
    expect(scopes.AUDIENCE_PERSON_WRITE).toBeNull()
  })

  test('two instances count into the same series: the answer is their sum', async () => {
    const a = await testService()
    const b = await testService()
    const businessId = await seedBusiness(a)
    const server = await seedKey(a, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    for (const service of [a, b, b]) expect((await call(service, '/api/v0/whoami', { key: server.key })).status).toBe(200)
    expect((await call(a, '/api/v0/audience/people', { key: server.key })).status).toBe(403)
    await Promise.all([a.services.usage.flush(), b.services.usage.flush()])
    const usage = await usageOf(a, server.record.id, '?interval=minute&from=' + new Date(Date.now() - 600_000).toISOString())
    // Ten minutes back from now: ten periods, or eleven when the range starts mid-minute.
    expect(usage.series.length).toBeGreaterThanOrEqual(10)
    expect(usage.series.length).toBeLessThanOrEqual(11)
    expect(totals(usage)).toEqual({ accepted: 3, refused: { insufficient_scope: 1 } })
  })

  test('counts reach the database by themselves within the flush interval', async () => {
    const service = await testService({ usage: { flushIntervalMs: 200 } })
    const businessId = await seedBusiness(service)
    const server = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    expect((await call(service, '/api/v0/whoami', { key: server.key })).status).toBe(200)
    const started = Date.now()
    let accepted = 0
    while (accepted === 0 && Date.now() - started < 5_000) {
      await Bun.sleep(100)
      accepted = totals(await usageOf(service, server.record.id)).accepted
    }
    expect(accepted).toBe(1)
  })

  test('bad ranges are 400 naming the field; an unknown key is 404', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const server = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const id = server.record.id
    for (const [query, field] of [
      ['?interval=week', 'interval'],
      ['?from=yesterday', 'from'],
      ['?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'from'],
      ['?interval=minute&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z', 'from'],
      ['?from=2026-02-30T00:00:00Z', 'from'],
      ['?to=0001-01-01T00:00:00Z', 'to'],
      ['?interval=day&from=9999-12-30T00:00:00Z&to=10000-01-01T00:00:00Z', 'to'],
    ] as const) {
      const response = await admin(service, `/keys/${id}/usage${query}`)
      expect({ query, status: response.status }).toEqual({ query, status: 400 })
      expect((await errorOf(response)).message).toContain(field)
    }
    expect((await admin(service, `/keys/${crypto.randomUUID()}/usage`)).status).toBe(404)
  })
})

describe('report-only origins', () => {
  test('a report-only key serves an origin its list does not allow, and counts it as reported', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const created = await admin(service, `/businesses/${businessId}/keys`, {
      body: {
        type: 'public',
        name: 'Trial',
        allowedOrigins: ['example.com'],
        scopes: ['ANALYTICS_WRITE'],
        originPolicy: 'report',
        createdBy: 'ops',
      },
    })
    expect(created.status).toBe(201)
    const { id, key, originPolicy } = (await created.json()) as { id: string; key: string; originPolicy: string }
    expect(originPolicy).toBe('report')
    const served = await call(service, '/api/v0/whoami', { key, origin: STRANGER })
    expect(served.status).toBe(200)
    expect(served.headers.get('access-control-allow-origin')).toBe(STRANGER)
    // It relaxes nothing else: a route outside the public set and a missing scope still refuse.
    expect((await call(service, '/api/v0/analytics', { key, origin: STRANGER })).status).toBe(403)
    expect(
      (await call(service, '/api/v0/audience/people', { key, origin: STRANGER, method: 'POST', body: { email: 'a@b.co' } })).status,
    ).toBe(403)
    await service.services.usage.flush()
    const usage = await usageOf(service, id)
    expect(usage.refusedOrigins).toEqual([{ origin: STRANGER, count: 3, lastSeenAt: expect.any(String), reported: true }])
    // Back to enforcing: the same origin is refused again.
    expect((await admin(service, `/keys/${id}`, { method: 'PATCH', body: { originPolicy: 'enforce' } })).status).toBe(200)
    expect((await call(service, '/api/v0/whoami', { key, origin: STRANGER })).status).toBe(403)
  })

  test('a private key cannot be report-only; an unknown policy is a 400', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const privateKey = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const patched = await admin(service, `/keys/${privateKey.record.id}`, { method: 'PATCH', body: { originPolicy: 'report' } })
    expect(patched.status).toBe(400)
    expect((await errorOf(patched)).message).toContain('originPolicy')
    const unknown = await admin(service, `/keys/${privateKey.record.id}`, { method: 'PATCH', body: { originPolicy: 'maybe' } })
    expect(unknown.status).toBe(400)
  })
})
