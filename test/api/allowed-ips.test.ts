import { afterAll, describe, expect, test } from 'bun:test'
import type { Service } from '../../src/app.ts'
import { admin, call, errorOf, seedBusiness, testService } from '../support/service.ts'

// Private keys restricted by client address, through the admin API
// and real sockets (the client address is the TCP peer, or X-Forwarded-For behind TRUST_PROXY).

interface KeyBody {
  id: string
  key: string
  type: string
  allowedIps: string[]
  ipPolicy: string
  lastUsedAt: string | null
}

interface Entry {
  action: string
  changes: Record<string, { from: unknown; to: unknown }>
}

async function createKey(service: Service, businessId: string, body: Record<string, unknown>) {
  return admin(service, `/businesses/${businessId}/keys`, {
    body: { type: 'private', name: 'Server', scopes: ['ANALYTICS_READ'], createdBy: 'ops', ...body },
  })
}

async function createdKey(service: Service, businessId: string, body: Record<string, unknown>): Promise<KeyBody> {
  const response = await createKey(service, businessId, body)
  expect(response.status).toBe(201)
  return (await response.json()) as KeyBody
}

async function trail(service: Service, keyId: string): Promise<Entry[]> {
  const response = await admin(service, `/keys/${keyId}/audit`)
  expect(response.status).toBe(200)
  return ((await response.json()) as { data: Entry[] }).data
}

const servers: { stop(): void }[] = []
afterAll(() => {
  for (const server of servers) server.stop()
})

/** The service listening on 127.0.0.1, so the TCP peer of every call is 127.0.0.1. */
function listen(service: Service): string {
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  servers.push(service.app.server!)
  return `http://127.0.0.1:${service.app.server!.port}`
}

function whoami(base: string, key: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/api/v0/whoami`, { headers: { authorization: `Bearer ${key}`, ...headers } })
}

describe('allowedIps on the key record', () => {
  test('create stores entries canonical; a key without them allows any address and reports enforce', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const key = await createdKey(service, businessId, {
      allowedIps: [' 203.0.113.7 ', '2001:DB8:0:0:0:0:0:0/48', '::ffff:198.51.100.0/120', '2001:db8::/48', '10.0.0.0/8', '192.0.2.1/32'],
      ipPolicy: 'enforce',
    })
    expect(key.allowedIps).toEqual(['203.0.113.7', '2001:db8::/48', '198.51.100.0/24', '10.0.0.0/8', '192.0.2.1'])
    expect(key.ipPolicy).toBe('enforce')
    const plain = await createdKey(service, businessId, {})
    expect(plain.allowedIps).toEqual([])
    expect(plain.ipPolicy).toBe('enforce')
  })

  test('a range with host bits set is refused with the corrected range as the hint', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await createKey(service, businessId, { allowedIps: ['198.51.100.7/24'] })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('allowedIps[0]')
    expect(error.message).toContain('198.51.100.0/24')
    const v6 = await createKey(service, businessId, { allowedIps: ['2001:db8::1/64'] })
    expect(v6.status).toBe(400)
    expect((await errorOf(v6)).message).toContain('2001:db8::/64')
  })

  test.each(['203.0.113.256', '203.0.113.07', '10.0.0.0/33', '2001:db8::/129', 'example.com', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0', ''])(
    'an invalid entry %p is a 400 naming it',
    async (entry) => {
      const service = await testService()
      const businessId = await seedBusiness(service)
      const response = await createKey(service, businessId, { allowedIps: [entry] })
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toContain('allowedIps[0]')
    },
  )

  test('more than 100 entries are a 400', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const entries = Array.from({ length: 101 }, (_, i) => `10.0.${i}.0/24`)
    expect((await createKey(service, businessId, { allowedIps: entries })).status).toBe(400)
  })

  test('a public key takes no allowed IPs and cannot be IP report-only', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const base = { type: 'public', allowedOrigins: ['example.com'], scopes: ['ANALYTICS_WRITE'] }
    const refused = await createKey(service, businessId, { ...base, allowedIps: ['203.0.113.7'] })
    expect(refused.status).toBe(400)
    expect((await errorOf(refused)).message).toContain('allowed origins')
    expect((await createKey(service, businessId, { ...base, ipPolicy: 'report' })).status).toBe(400)
    const site = await createdKey(service, businessId, base)
    const patched = await admin(service, `/keys/${site.id}`, { method: 'PATCH', body: { allowedIps: ['203.0.113.7'] } })
    expect(patched.status).toBe(400)
  })

  test('PATCH changes the list and policy, each change audited; roll keeps them', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const key = await createdKey(service, businessId, { allowedIps: ['203.0.113.7'] })
    const patched = await admin(service, `/keys/${key.id}`, {
      method: 'PATCH',
      body: { allowedIps: ['203.0.113.7', '2001:0DB8::/32'], ipPolicy: 'report' },
    })
    expect(patched.status).toBe(200)
    const record = (await patched.json()) as KeyBody
    expect(record.allowedIps).toEqual(['203.0.113.7', '2001:db8::/32'])
    expect(record.ipPolicy).toBe('report')

    const entries = await trail(service, key.id)
    expect(entries.map((e) => e.action)).toEqual(['key.updated', 'key.created'])
    expect(entries[0]!.changes).toEqual({
      allowedIps: { from: ['203.0.113.7'], to: ['203.0.113.7', '2001:db8::/32'] },
      ipPolicy: { from: 'enforce', to: 'report' },
    })
    expect(entries[1]!.changes.allowedIps).toEqual({ from: null, to: ['203.0.113.7'] })

    const rolled = await admin(service, `/keys/${key.id}/roll`, { body: {} })
    expect(rolled.status).toBe(201)
    const next = (await rolled.json()) as KeyBody
    expect(next.allowedIps).toEqual(['203.0.113.7', '2001:db8::/32'])
    expect(next.ipPolicy).toBe('report')

    const cleared = await admin(service, `/keys/${next.id}`, { method: 'PATCH', body: { allowedIps: [] } })
    expect(((await cleared.json()) as KeyBody).allowedIps).toEqual([])
  })
})

describe('check 5 for private keys: the client address', () => {
  test('an address outside the list is 403 ip_not_allowed naming it, and writes nothing', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, { allowedIps: ['203.0.113.0/24'], scopes: ['ANALYTICS_WRITE'] })
    const response = await whoami(base, key.key)
    expect(response.status).toBe(403)
    const error = await errorOf(response)
    expect(error.code).toBe('ip_not_allowed')
    expect(error.message).toContain('127.0.0.1')
    expect(error.message).toContain('203.0.113.0/24')
    expect(error.message).toContain('allowed IPs')
    // Check 5 comes before the scope check: a refused address never learns about scopes.
    const wrongScope = await fetch(`${base}/api/v0/analytics`, { headers: { authorization: `Bearer ${key.key}` } })
    expect((await errorOf(wrongScope)).code).toBe('ip_not_allowed')
    const event = await fetch(`${base}/api/v0/analytics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ eventType: 'page_view' }),
    })
    expect(event.status).toBe(403)
    await service.services.lastUsed.flush()
    await service.services.usage.flush()
    const stored = (await (await admin(service, `/keys/${key.id}`)).json()) as KeyBody
    expect(stored.lastUsedAt).toBeNull()
    const reader = await createdKey(service, businessId, { scopes: ['ANALYTICS_READ'] })
    const events = await fetch(`${base}/api/v0/analytics`, { headers: { authorization: `Bearer ${reader.key}` } })
    expect(events.status).toBe(200)
    expect(((await events.json()) as { data: unknown[] }).data).toEqual([])
    const usage = (await (await admin(service, `/keys/${key.id}/usage`)).json()) as { refusedIps: unknown[] }
    expect(usage.refusedIps).toEqual([{ ip: '127.0.0.1', count: 3, lastSeenAt: expect.any(String), reported: false }])
  })

  test('an allowed address is served, and counts as a use', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, { allowedIps: ['203.0.113.7', '127.0.0.0/8'] })
    const response = await whoami(base, key.key)
    expect(response.status).toBe(200)
    await service.services.lastUsed.flush()
    const stored = (await (await admin(service, `/keys/${key.id}`)).json()) as KeyBody
    expect(stored.lastUsedAt).not.toBeNull()
  })

  test('an IPv4-mapped IPv6 client matches an IPv4 entry', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    // A dual-stack socket: IPv4 clients arrive as ::ffff:127.0.0.1.
    service.app.listen({ port: 0, hostname: '::' })
    servers.push(service.app.server!)
    const base = `http://127.0.0.1:${service.app.server!.port}`
    const key = await createdKey(service, businessId, { allowedIps: ['127.0.0.1'] })
    expect((await whoami(base, key.key)).status).toBe(200)
    const mapped = await createdKey(service, businessId, { allowedIps: ['::ffff:127.0.0.1'] })
    expect(mapped.allowedIps).toEqual(['127.0.0.1'])
    expect((await whoami(base, mapped.key)).status).toBe(200)
  })

  test('behind TRUST_PROXY, the right-most untrusted X-Forwarded-For entry is the address checked', async () => {
    const service = await testService({ trustProxy: ['127.0.0.1', '10.0.0.0/8'] })
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, { allowedIps: ['2001:db8::/32', '198.51.100.0/24'] })
    expect((await whoami(base, key.key, { 'x-forwarded-for': '192.0.2.1, 198.51.100.20, 10.1.2.3' })).status).toBe(200)
    expect((await whoami(base, key.key, { 'x-forwarded-for': '2001:DB8:0::5' })).status).toBe(200)
    const refused = await whoami(base, key.key, { 'x-forwarded-for': '198.51.100.20, 192.0.2.1' })
    expect(refused.status).toBe(403)
    expect((await errorOf(refused)).message).toContain('192.0.2.1')
  })

  test('without TRUST_PROXY a forged X-Forwarded-For does not get a key in', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, { allowedIps: ['198.51.100.0/24'] })
    expect((await whoami(base, key.key, { 'x-forwarded-for': '198.51.100.20' })).status).toBe(403)
  })

  test('ipPolicy report serves the address and counts it as reported', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, { allowedIps: ['203.0.113.0/24'], ipPolicy: 'report' })
    expect((await whoami(base, key.key)).status).toBe(200)
    expect((await whoami(base, key.key)).status).toBe(200)
    await service.services.usage.flush()
    const usage = (await (await admin(service, `/keys/${key.id}/usage`)).json()) as {
      series: { accepted: number }[]
      refusedIps: unknown[]
    }
    expect(usage.refusedIps).toEqual([{ ip: '127.0.0.1', count: 2, lastSeenAt: expect.any(String), reported: true }])
    expect(usage.series.reduce((n, p) => n + p.accepted, 0)).toBe(2)
  })

  test('a key without allowedIps is served from any address', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const key = await createdKey(service, businessId, {})
    // app.handle has no socket: the address is unknown, and no list means it is not asked.
    expect((await call(service, '/api/v0/whoami', { key: key.key })).status).toBe(200)
  })
})

describe('behind a trusted proxy, an X-Forwarded-For entry that is not an address', () => {
  test('is the client as written: it matches no allowed address, never the proxy, and the message offers a fix that exists', async () => {
    // The proxy is this test's own loopback; the key allows that address and nothing else.
    const service = await testService({ trustProxy: ['127.0.0.1'] })
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, { allowedIps: ['127.0.0.1'] })
    expect((await whoami(base, key.key)).status).toBe(200)
    for (const entry of ['unknown', '203.0.113.7:443', '[2001:db8::1]', 'fe80::1%eth0', 'garbage']) {
      const response = await whoami(base, key.key, { 'x-forwarded-for': `198.51.100.1, ${entry}` })
      expect(response.status).toBe(403)
      const { code, message } = await errorOf(response)
      expect(code).toBe('ip_not_allowed')
      expect(message).toContain(`came from ${entry}`)
      expect(message).toContain('is not an IP address')
      expect(message).not.toContain(`Add ${entry}`)
    }
  })

  test('has a budget of its own: it neither spends nor shares the proxy’s or another entry’s', async () => {
    const service = await testService({ trustProxy: ['127.0.0.1'] })
    const businessId = await seedBusiness(service)
    const base = listen(service)
    const key = await createdKey(service, businessId, {
      type: 'public',
      allowedIps: undefined,
      allowedOrigins: ['example.com'],
      scopes: ['ANALYTICS_WRITE'],
      rateLimit: { limit: 1, windowSeconds: 60 },
    })
    const from = (entry: string) => whoami(base, key.key, { 'x-forwarded-for': entry, origin: 'https://example.com' })
    expect((await from('unknown')).status).toBe(200)
    expect((await from('unknown')).status).toBe(429)
    expect((await from('garbage')).status).toBe(200)
    // The proxy's own address was never charged for them.
    expect((await whoami(base, key.key, { origin: 'https://example.com' })).status).toBe(200)
  })
})
