import { afterAll, describe, expect, test } from 'bun:test'
import { count, eq } from 'drizzle-orm'
import { analyticsEvents, apiKeys } from '../../db/schema/index.ts'
import { hashKey } from '../../src/access/key-format.ts'
import { testDatabase, testEventsDatabase } from '../support/database.ts'
import {
  admin,
  ADMIN_TOKEN,
  behindTrustedProxy,
  call,
  errorOf,
  seedBusiness,
  seedKey,
  testService,
  TEST_AUTHOR,
  type SeedKeyOptions,
} from '../support/service.ts'

const ORIGIN = 'https://www.example.com'

/** A service whose budgets run on a clock the test moves, behind a trusted proxy. */
async function limited(overrides: Parameters<typeof testService>[0] = {}) {
  let clock = 1_000_000
  const service = await testService({ clientAddress: behindTrustedProxy, limitClock: () => clock, ...overrides })
  const businessId = await seedBusiness(service)
  return {
    service,
    businessId,
    advance: (ms: number) => void (clock += ms),
    key: (options: SeedKeyOptions) => seedKey(service, businessId, options),
  }
}

function whoami(service: Parameters<typeof call>[0], key: string, from?: string, origin = ORIGIN) {
  return call(service, '/api/v0/whoami', { key, origin, headers: from ? { 'x-forwarded-for': from } : {} })
}

async function statuses(responses: Promise<Response>[]): Promise<number[]> {
  return (await Promise.all(responses)).map((response) => response.status)
}

describe("private keys: the budget is the key's", () => {
  test('a burst over the limit gets exactly the limit; the rest 429 with Retry-After and RateLimit-*', async () => {
    const s = await limited()
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: { limit: 5, windowSeconds: 60 } })
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => whoami(s.service, key, `198.51.100.${i + 1}`)))
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429])
    const accepted = answers.filter((a) => a.status === 200)
    // Every answer to a private key carries the three headers, the accepted ones too.
    expect(accepted.map((a) => Number(a.headers.get('ratelimit-remaining'))).sort()).toEqual([0, 1, 2, 3, 4])
    for (const answer of accepted) {
      expect(answer.headers.get('ratelimit-limit')).toBe('5')
      expect(Number(answer.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1)
    }
    const refused = answers.find((a) => a.status === 429)!
    expect(refused.headers.get('retry-after')).toBe('12')
    expect(refused.headers.get('ratelimit-limit')).toBe('5')
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')
    expect(refused.headers.get('ratelimit-reset')).toBe('60')
    const error = await errorOf(refused)
    expect(error.code).toBe('rate_limited')
    expect(error.message).toContain('Retry after 12 s')
  })

  test('a refusal before the budget (a missing scope, an address not allowed) carries RateLimit-* too, and spends nothing', async () => {
    const s = await limited()
    const { key, record } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: { limit: 5, windowSeconds: 60 } })
    const read = () => call(s.service, '/api/v0/analytics', { key })
    const write = () => call(s.service, '/api/v0/analytics', { key, method: 'POST', body: { eventType: 'x' } })
    expect((await read()).headers.get('ratelimit-remaining')).toBe('4')
    const noScope = await write()
    expect((await errorOf(noScope)).code).toBe('insufficient_scope')
    expect([noScope.headers.get('ratelimit-limit'), noScope.headers.get('ratelimit-remaining')]).toEqual(['5', '4'])
    expect(Number(noScope.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1)
    await s.service.services.keys.update(s.businessId, record.id, { allowedIps: ['192.0.2.1'] }, TEST_AUTHOR)
    const elsewhere = await whoami(s.service, key, '198.51.100.9')
    expect((await errorOf(elsewhere)).code).toBe('ip_not_allowed')
    expect(elsewhere.headers.get('ratelimit-remaining')).toBe('4')
    await s.service.services.keys.update(s.businessId, record.id, { allowedIps: [] }, TEST_AUTHOR)
    expect((await read()).headers.get('ratelimit-remaining')).toBe('3')
  })

  test('the budget returns: one request per interval, the whole budget one window after the burst', async () => {
    const s = await limited()
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: { limit: 3, windowSeconds: 30 } })
    expect(await statuses([1, 2, 3, 4].map(() => whoami(s.service, key)))).toEqual([200, 200, 200, 429])
    s.advance(9_999)
    expect((await whoami(s.service, key)).status).toBe(429)
    s.advance(1)
    expect(await statuses([1, 2].map(() => whoami(s.service, key)))).toEqual([200, 429])
    s.advance(30_000)
    expect(await statuses([1, 2, 3, 4].map(() => whoami(s.service, key)))).toEqual([200, 200, 200, 429])
  })

  test('a key without its own limit gets RATE_LIMIT_PRIVATE', async () => {
    const budgets = { public: { limit: 50, windowSeconds: 60 }, private: { limit: 2, windowSeconds: 60 } }
    const s = await limited({
      rateLimits: { ...budgets, apiAuthFailures: { limit: 300, windowSeconds: 60 }, adminAuthFailures: { limit: 30, windowSeconds: 60 } },
    })
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    const answers = await Promise.all([1, 2, 3].map(() => whoami(s.service, key)))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429])
    expect(answers[0]!.headers.get('ratelimit-limit')).toBe('2')
  })

  test('a refused request writes nothing and never reaches the handler', async () => {
    const s = await limited()
    const { key, record } = await s.key({ type: 'private', scopes: ['ANALYTICS_WRITE'], rateLimit: { limit: 1, windowSeconds: 60 } })
    const send = () => call(s.service, '/api/v0/analytics', { method: 'POST', key, body: { eventType: 'page_view' } })
    expect((await send()).status).toBe(202)
    expect((await send()).status).toBe(429)
    await s.service.services.lastUsed.flush()
    const { db } = await testEventsDatabase()
    const [stored] = await db.select({ n: count() }).from(analyticsEvents).where(eq(analyticsEvents.keyId, record.id))
    expect(stored!.n).toBe(1)
  })
})

describe("public keys: the budget is each visitor's", () => {
  test('one visitor using up its budget leaves the others theirs', async () => {
    const s = await limited()
    const { key } = await s.key({ type: 'public', rateLimit: { limit: 3, windowSeconds: 60 } })
    const a = await statuses([1, 2, 3, 4, 5].map(() => whoami(s.service, key, '198.51.100.7')))
    expect(a.filter((status) => status === 200)).toHaveLength(3)
    expect(a.filter((status) => status === 429)).toHaveLength(2)
    expect(await statuses([1, 2, 3].map(() => whoami(s.service, key, '198.51.100.8')))).toEqual([200, 200, 200])
    // Public answers carry no RateLimit-* headers (only refusals do).
    const other = await whoami(s.service, key, '198.51.100.9')
    expect(other.headers.get('ratelimit-limit')).toBeNull()
  })

  test('IPv6 visitors share one budget per /64', async () => {
    const s = await limited()
    const { key } = await s.key({ type: 'public', rateLimit: { limit: 2, windowSeconds: 60 } })
    expect((await whoami(s.service, key, '2001:db8:1:2::1')).status).toBe(200)
    expect((await whoami(s.service, key, '2001:db8:1:2::ffff')).status).toBe(200)
    expect((await whoami(s.service, key, '2001:db8:1:2:aaaa::3')).status).toBe(429)
    expect((await whoami(s.service, key, '2001:db8:1:3::1')).status).toBe(200)
  })

  test('the limit comes after the origin and scope checks: an over-budget visitor still learns what is wrong', async () => {
    const s = await limited()
    const { key } = await s.key({ type: 'public', scopes: ['ANALYTICS_WRITE'], rateLimit: { limit: 1, windowSeconds: 60 } })
    expect((await whoami(s.service, key, '198.51.100.1')).status).toBe(200)
    expect((await whoami(s.service, key, '198.51.100.1')).status).toBe(429)
    const badOrigin = await whoami(s.service, key, '198.51.100.1', 'https://evil.example.org')
    expect((await errorOf(badOrigin)).code).toBe('origin_not_allowed')
    const badScope = await call(s.service, '/api/v0/audience/people', {
      method: 'POST',
      key,
      origin: ORIGIN,
      headers: { 'x-forwarded-for': '198.51.100.1' },
      body: { email: 'a@example.com' },
    })
    expect((await errorOf(badScope)).code).toBe('insufficient_scope')
  })

  test('an over-budget request with an invalid body is 429, not 400: the body is never read', async () => {
    const s = await limited()
    const { key, record } = await s.key({ type: 'public', rateLimit: { limit: 1, windowSeconds: 60 } })
    const send = (body: unknown) =>
      call(s.service, '/api/v0/analytics', { method: 'POST', key, origin: ORIGIN, headers: { 'x-forwarded-for': '198.51.100.2' }, body })
    expect((await send({ eventType: 'page_view' })).status).toBe(202)
    // Not JSON, and a stream that notes being read: parsed, it would be a 400; read, it says so.
    let pulled = false
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulled = true
          controller.enqueue(new TextEncoder().encode('{"eventType":'))
          controller.close()
        },
      },
      { highWaterMark: 0 },
    )
    const refused = await s.service.app.handle(
      new Request('http://localhost/api/v0/analytics', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'x-forwarded-for': '198.51.100.2', 'content-type': 'application/json' },
        body,
      }),
    )
    expect(refused.status).toBe(429)
    expect(pulled).toBe(false)
    expect(refused.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    const { db } = await testEventsDatabase()
    const [stored] = await db.select({ n: count() }).from(analyticsEvents).where(eq(analyticsEvents.keyId, record.id))
    expect(stored!.n).toBe(1)
  })
})

describe('without TRUST_PROXY, over a real socket', () => {
  const servers: { stop(): void }[] = []
  afterAll(() => {
    for (const server of servers) server.stop()
  })

  test("X-Forwarded-For is ignored: every forged address draws on the one peer's budget", async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { type: 'public', rateLimit: { limit: 2, windowSeconds: 60 } })
    service.app.listen({ port: 0, hostname: '127.0.0.1' })
    servers.push(service.app.server!)
    const base = `http://127.0.0.1:${service.app.server!.port}`
    const answers = []
    for (const forged of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      answers.push(
        await fetch(`${base}/api/v0/whoami`, {
          headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'x-forwarded-for': forged },
        }),
      )
    }
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429])
  })

  test('with TRUST_PROXY naming the peer, X-Forwarded-For picks the visitor', async () => {
    const service = await testService({ trustProxy: ['127.0.0.1', '::1'] })
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { type: 'public', rateLimit: { limit: 1, windowSeconds: 60 } })
    service.app.listen({ port: 0, hostname: '127.0.0.1' })
    servers.push(service.app.server!)
    const base = `http://127.0.0.1:${service.app.server!.port}`
    const send = (visitor: string) =>
      fetch(`${base}/api/v0/whoami`, { headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'x-forwarded-for': visitor } })
    expect((await send('203.0.113.1')).status).toBe(200)
    expect((await send('203.0.113.1')).status).toBe(429)
    expect((await send('203.0.113.2')).status).toBe(200)
  })
})

describe('failed authentication is budgeted per address', () => {
  const auth = {
    public: { limit: 300, windowSeconds: 60 },
    private: { limit: 6000, windowSeconds: 60 },
    apiAuthFailures: { limit: 3, windowSeconds: 60 },
    adminAuthFailures: { limit: 2, windowSeconds: 60 },
  }

  test('/api/v0: after the budget of invalid keys, even a valid key is 429 from that address, until the window passes', async () => {
    const s = await limited({ rateLimits: auth })
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    const unknown = 'sk_' + 'x'.repeat(32)
    for (let i = 0; i < 3; i++) expect((await whoami(s.service, unknown, '198.51.100.66')).status).toBe(401)
    const refused = await whoami(s.service, key, '198.51.100.66')
    expect(refused.status).toBe(429)
    expect((await errorOf(refused)).code).toBe('rate_limited')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // Another address is not affected; the first is served again once the window has passed.
    expect((await whoami(s.service, key, '198.51.100.67')).status).toBe(200)
    s.advance(60_000)
    expect((await whoami(s.service, key, '198.51.100.66')).status).toBe(200)
  })

  test('/api/v0: more than the budget of distinct unknown keys within a minute, however spread, is refused on every route', async () => {
    // The default budget (300 a minute), the failures spread over 45 s: a guesser that
    // paces itself must still meet "more than 300 within a minute".
    const s = await limited()
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    const address = '198.51.100.80'
    for (let i = 0; i < 300; i++) {
      const guess = `sk_${crypto.randomUUID().replaceAll('-', '')}`
      const path = i % 2 === 0 ? '/api/v0/whoami' : '/api/v0/analytics'
      expect((await call(s.service, path, { key: guess, headers: { 'x-forwarded-for': address } })).status).toBe(401)
      s.advance(150)
    }
    for (const path of ['/api/v0/whoami', '/api/v0/analytics']) {
      const refused = await call(s.service, path, { key, headers: { 'x-forwarded-for': address } })
      expect(refused.status).toBe(429)
      expect((await errorOf(refused)).code).toBe('rate_limited')
    }
    // A minute after the last failure the address is served again.
    s.advance(60_000)
    expect((await whoami(s.service, key, address)).status).toBe(200)
  })

  test('/api/v0: refused origins and refused client addresses count toward the same budget', async () => {
    const s = await limited({ rateLimits: auth })
    const { key: publicKey } = await s.key({ type: 'public', allowedOrigins: ['example.com'] })
    const { key: privateKey } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    const pinned = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'], name: 'pinned' })
    await s.service.services.keys.update(s.businessId, pinned.record.id, { allowedIps: ['192.0.2.1'] }, TEST_AUTHOR)

    const flooding = '198.51.100.81'
    for (let i = 0; i < 3; i++) {
      const refused = await whoami(s.service, publicKey, flooding, `https://random-${i}.example.org`)
      expect((await errorOf(refused)).code).toBe('origin_not_allowed')
    }
    expect((await whoami(s.service, privateKey, flooding)).status).toBe(429)

    const elsewhere = '198.51.100.82'
    for (let i = 0; i < 3; i++) expect((await errorOf(await whoami(s.service, pinned.key, elsewhere))).code).toBe('ip_not_allowed')
    expect((await whoami(s.service, privateKey, elsewhere)).status).toBe(429)
    expect((await whoami(s.service, privateKey, '198.51.100.83')).status).toBe(200)
  })

  test('/api/v0: expired keys count, and the refusal comes before any key lookup', async () => {
    const s = await limited({ rateLimits: auth })
    const { key, record } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    const { db } = await testDatabase()
    await db
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(apiKeys.id, record.id))
    const keyStore = s.service.services.keyStore
    keyStore.invalidate(hashKey(key))
    const fresh = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    for (let i = 0; i < 3; i++) {
      const refused = await whoami(s.service, key, '198.51.100.70')
      expect((await errorOf(refused)).code).toBe('expired_api_key')
    }
    // The blocked address's request with a valid key never reaches the key store.
    const lookups = () => keyStore.stats.hit + keyStore.stats.negative + keyStore.stats.miss
    const before = lookups()
    expect((await whoami(s.service, fresh.key, '198.51.100.70')).status).toBe(429)
    expect(lookups()).toBe(before)
    // From another address the same key is looked up and served.
    expect((await whoami(s.service, fresh.key, '198.51.100.71')).status).toBe(200)
    expect(lookups()).toBe(before + 1)
  })

  test('/api/v0: keys whose checksum fails count, and the next request from that address is refused', async () => {
    const s = await limited({ rateLimits: auth })
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    const mangled = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a')
    for (let i = 0; i < 3; i++) expect((await errorOf(await whoami(s.service, mangled, '198.51.100.72'))).code).toBe('malformed_api_key')
    expect((await whoami(s.service, key, '198.51.100.72')).status).toBe(429)
    expect((await whoami(s.service, key, '198.51.100.73')).status).toBe(200)
  })

  test('/api/v0: other malformed keys do not count toward the budget', async () => {
    const s = await limited({ rateLimits: auth })
    const { key } = await s.key({ type: 'private', scopes: ['ANALYTICS_READ'] })
    for (let i = 0; i < 5; i++)
      expect((await errorOf(await whoami(s.service, `sk_${'a'.repeat(19)}`, '198.51.100.74'))).code).toBe('malformed_api_key')
    expect((await whoami(s.service, key, '198.51.100.74')).status).toBe(200)
  })

  test('/admin/v0: after the budget of wrong tokens, even the right token is 429 from that address', async () => {
    const s = await limited({ rateLimits: auth })
    const wrong = { token: 'wrong-token-0123456789', headers: { 'x-forwarded-for': '198.51.100.90' } }
    expect((await admin(s.service, '/businesses', wrong)).status).toBe(401)
    expect((await admin(s.service, '/businesses', wrong)).status).toBe(401)
    const refused = await admin(s.service, '/businesses', { headers: { 'x-forwarded-for': '198.51.100.90' } })
    expect(refused.status).toBe(429)
    expect((await errorOf(refused)).code).toBe('rate_limited')
    const elsewhere = await admin(s.service, '/businesses', { token: ADMIN_TOKEN, headers: { 'x-forwarded-for': '198.51.100.91' } })
    expect(elsewhere.status).toBe(200)
  })
})

describe('rateLimit on the key record', () => {
  test('admin create and PATCH set it, null goes back to the default, and bad values are 400 naming the field', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const created = await admin(service, `/businesses/${businessId}/keys`, {
      method: 'POST',
      body: { type: 'private', name: 'server', scopes: ['ANALYTICS_READ'], createdBy: 'ops', rateLimit: { limit: 100, windowSeconds: 10 } },
    })
    expect(created.status).toBe(201)
    const record = (await created.json()) as { id: string; rateLimit: unknown }
    expect(record.rateLimit).toEqual({ limit: 100, windowSeconds: 10 })
    const patched = await admin(service, `/keys/${record.id}`, { method: 'PATCH', body: { rateLimit: null } })
    expect(((await patched.json()) as { rateLimit: unknown }).rateLimit).toBeNull()
    for (const rateLimit of [
      { limit: 0, windowSeconds: 10 },
      { limit: 1_000_001, windowSeconds: 10 },
      { limit: 1.5, windowSeconds: 10 },
      { limit: 10, windowSeconds: 86_401 },
      { limit: 10 },
      '100/60',
    ]) {
      const refused = await admin(service, `/keys/${record.id}`, { method: 'PATCH', body: { rateLimit } })
      expect(refused.status).toBe(400)
      const { message } = await errorOf(refused)
      // The field at fault inside the object when there is one (rateLimit.limit), else rateLimit.
      expect(message).toMatch(/"rateLimit(\.limit|\.windowSeconds)?"/)
      expect(message).toMatch(/1000000|86400/)
    }
    const { db } = await testDatabase()
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, record.id))
    expect([row!.rateLimitLimit, row!.rateLimitWindowSeconds]).toEqual([null, null])
  })
})
