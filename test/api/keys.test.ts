import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys } from '../../db/schema/index.ts'
import { hashKey } from '../../src/access/key-format.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'
import { createLogger } from '../../src/observability/log.ts'

// Keys, their creation rules, storage, lastUsedAt, revocation, expiry.

const base = { name: 'Website', createdBy: 'ops' }
const publicBase = { ...base, type: 'public', allowedOrigins: ['example.com'], scopes: ['ANALYTICS_WRITE'] }
const privateBase = { ...base, type: 'private', scopes: ['ANALYTICS_READ'] }

async function rows() {
  return (await testDatabase()).db.select().from(apiKeys)
}

describe('creation rules', () => {
  const refused: [string, Record<string, unknown>, string][] = [
    ['an empty name', { ...publicBase, name: '' }, 'name'],
    ['a name of spaces', { ...publicBase, name: '   ' }, 'name'],
    ['a name over 100 characters', { ...publicBase, name: 'n'.repeat(101) }, 'name'],
    ['no scopes', { ...publicBase, scopes: [] }, 'scopes'],
    ['scope ALL', { ...privateBase, scopes: ['ALL'] }, 'ALL'],
    ['an unknown scope', { ...privateBase, scopes: ['ANALYTICS_DELETE'] }, 'ANALYTICS_DELETE'],
    ['a lower-case scope', { ...privateBase, scopes: ['analytics_read'] }, 'analytics_read'],
    ['a public key with a scope no public endpoint uses', { ...publicBase, scopes: ['ANALYTICS_READ'] }, 'ANALYTICS_READ'],
    ['a public key with MEMORY_WRITE', { ...publicBase, scopes: ['ANALYTICS_WRITE', 'MEMORY_WRITE'] }, 'MEMORY_WRITE'],
    ['a public key without allowed origins', { ...publicBase, allowedOrigins: [] }, 'allowedOrigins'],
    ['a public key with allowedOrigins left out', { ...base, type: 'public', scopes: ['ANALYTICS_WRITE'] }, 'allowedOrigins'],
    ['a public key with an invalid origin', { ...publicBase, allowedOrigins: ['example.com', '*.example.com'] }, 'allowedOrigins[1]'],
    ['a private key with allowed origins', { ...privateBase, allowedOrigins: ['example.com'] }, 'allowedOrigins'],
    ['an expiry in the past', { ...publicBase, expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt'],
    ['an expiry that is not a date', { ...publicBase, expiresAt: 'next week' }, 'expiresAt'],
    ['an unknown type', { ...publicBase, type: 'secret' }, 'type'],
    // Bodies are never coerced: "5" is not 5.
    ['a rate limit given as text', { ...privateBase, rateLimit: { limit: '5', windowSeconds: 60 } }, 'rateLimit.limit'],
    ['a rate-limit window given as text', { ...privateBase, rateLimit: { limit: 5, windowSeconds: '60' } }, 'rateLimit.windowSeconds'],
    ['a missing createdBy', { type: 'public', name: 'x', allowedOrigins: ['example.com'], scopes: ['ANALYTICS_WRITE'] }, 'createdBy'],
  ]
  test.each(refused)('%s answers 400 invalid_request naming the field, and stores nothing', async (_, body, field) => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, { body })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain(field)
    expect(await rows()).toEqual([])
  })

  test('PATCH refuses a rate limit given as text and keeps the stored one', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId, { type: 'private', rateLimit: { limit: 7, windowSeconds: 60 } })
    for (const [rateLimit, field] of [
      [{ limit: '5', windowSeconds: 60 }, 'rateLimit.limit'],
      [{ limit: 5, windowSeconds: '60' }, 'rateLimit.windowSeconds'],
    ] as const) {
      const response = await admin(service, `/keys/${record.id}`, { method: 'PATCH', body: { rateLimit } })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toContain(field)
    }
    const [stored] = await rows()
    expect([stored!.rateLimitLimit, stored!.rateLimitWindowSeconds]).toEqual([7, 60])
  })

  test('every problem of a request is named at once', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, {
      body: { ...publicBase, scopes: ['ALL'], allowedOrigins: ['https://'], expiresAt: '2001-01-01T00:00:00Z' },
    })
    const { message } = await errorOf(response)
    for (const field of ['scopes', 'allowedOrigins[0]', 'expiresAt']) expect(message).toContain(field)
  })

  test('the message for *.example.com says that example.com already covers subdomains', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, { body: { ...publicBase, allowedOrigins: ['*.example.com'] } })
    expect((await errorOf(response)).message).toContain('example.com')
  })

  test('allowed origins are stored canonical: trimmed, lower case, punycode, no default port', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, {
      body: { ...publicBase, allowedOrigins: ['  Example.COM ', 'https://App.Example.com:443/', 'bücher.de', 'localhost:3000'] },
    })
    expect(response.status).toBe(201)
    expect((await response.json()).allowedOrigins).toEqual(['example.com', 'https://app.example.com', 'xn--bcher-kva.de', 'localhost:3000'])
  })

  test('a private key with every scope is accepted', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const all = [
      'ANALYTICS_READ',
      'ANALYTICS_WRITE',
      'AUDIENCE_PERSON_READ',
      'AUDIENCE_PERSON_WRITE',
      'AUDIENCE_COMPANY_READ',
      'AUDIENCE_COMPANY_WRITE',
      'AUDIENCE_LIST_READ',
      'AUDIENCE_LIST_WRITE',
      'BLOG_READ',
      'BLOG_WRITE',
      'FLOW_TRIGGER',
      'MEMORY_READ',
      'MEMORY_WRITE',
    ]
    const response = await admin(service, `/businesses/${businessId}/keys`, { body: { ...privateBase, scopes: all } })
    expect(response.status).toBe(201)
    expect((await response.json()).key).toMatch(/^sk_[A-Za-z0-9]{36}$/)
  })
})

describe('storage', () => {
  test('a private key is stored only as its SHA-256 digest and a redacted hint', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { type: 'private' })
    const [row] = await rows()
    expect(row!.keyHash).toBe(new Bun.CryptoHasher('sha256').update(key).digest('hex'))
    expect(row!.publicKey).toBeNull()
    expect(row!.keyHint).toBe(`sk_…${key.slice(-4)}`)
    expect(JSON.stringify(row)).not.toContain(key.slice(3))
  })

  test('generated keys are 32 characters of the key alphabet and differ every time', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const seen = new Set<string>()
    for (let i = 0; i < 20; i++) {
      const { key } = await seedKey(service, businessId, { type: i % 2 ? 'private' : 'public' })
      expect(key).toMatch(/^(pk|sk)_[A-Za-z0-9]{36}$/)
      seen.add(key)
    }
    expect(seen.size).toBe(20)
  })
})

describe('lastUsedAt', () => {
  async function lastUsedOf(id: string) {
    const [row] = await (await testDatabase()).db.select().from(apiKeys).where(eq(apiKeys.id, id))
    return row!.lastUsedAt
  }

  test('an accepted request is written off the request path and visible within 2 s', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId)
    const before = Date.now()
    expect((await call(service, '/api/v0/whoami', { key, origin: 'https://example.com' })).status).toBe(200)
    let seen: Date | null = null
    for (const deadline = Date.now() + 2000; !seen && Date.now() < deadline; ) {
      await Bun.sleep(50)
      seen = await lastUsedOf(record.id)
    }
    expect(seen).toBeInstanceOf(Date)
    expect(seen!.getTime()).toBeGreaterThanOrEqual(before - 1000)
    const listed = await (await admin(service, `/keys/${record.id}`)).json()
    expect(listed.lastUsedAt).toBe(seen!.toISOString())
  })

  test('uses within a minute are coalesced: one write, the stored value stays', async () => {
    let now = Date.now()
    const service = await testService({ now: () => now })
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId)
    await call(service, '/api/v0/whoami', { key, origin: 'https://example.com' })
    await service.services.lastUsed.flush()
    const first = await lastUsedOf(record.id)
    now += 30_000
    for (let i = 0; i < 5; i++) await call(service, '/api/v0/whoami', { key, origin: 'https://example.com' })
    await service.services.lastUsed.flush()
    expect(await lastUsedOf(record.id)).toEqual(first)
    now += 31_000
    await call(service, '/api/v0/whoami', { key, origin: 'https://example.com' })
    await service.services.lastUsed.flush()
    expect((await lastUsedOf(record.id))!.getTime()).toBe(now)
  })

  test('a refused request writes no lastUsedAt', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId)
    expect((await call(service, '/api/v0/whoami', { key, origin: 'https://evil.io' })).status).toBe(403)
    await service.services.lastUsed.flush()
    expect(await lastUsedOf(record.id)).toBeNull()
  })

  test('the stored value never moves backwards, whichever instance writes last', async () => {
    const now = Date.now()
    const a = await testService({ now: () => now })
    const b = await testService({ now: () => now - 120_000 })
    const businessId = await seedBusiness(a)
    const { key, record } = await seedKey(a, businessId)
    await call(a, '/api/v0/whoami', { key, origin: 'https://example.com' })
    await a.services.lastUsed.flush()
    await call(b, '/api/v0/whoami', { key, origin: 'https://example.com' })
    await b.services.lastUsed.flush()
    expect((await lastUsedOf(record.id))!.getTime()).toBe(now)
  })
})

describe('revocation and changes across instances', () => {
  test('a key revoked on one instance is refused on another within 1 s', async () => {
    const a = await testService()
    const b = await testService()
    const businessId = await seedBusiness(a)
    const { key, record } = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key, origin: 'https://example.com' })).status).toBe(200)
    await admin(a, `/keys/${record.id}`, { method: 'DELETE' })
    const revokedAt = Date.now()
    let status = 200
    while (status === 200 && Date.now() - revokedAt < 1000) {
      status = (await call(b, '/api/v0/whoami', { key, origin: 'https://example.com' })).status
      if (status === 200) await Bun.sleep(25)
    }
    expect(status).toBe(401)
  })

  test('a key created on one instance works on another at once, and a near miss does not', async () => {
    const a = await testService()
    const b = await testService()
    const businessId = await seedBusiness(a)
    const response = await admin(a, `/businesses/${businessId}/keys`, { body: publicBase })
    const { key } = await response.json()
    expect((await call(b, '/api/v0/whoami', { key, origin: 'https://example.com' })).status).toBe(200)
    expect(
      (await call(b, '/api/v0/whoami', { key: key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a'), origin: 'https://example.com' })).status,
    ).toBe(401)
  })

  test('the key store answers from cache: a flood of one unknown key reads the database once', async () => {
    const service = await testService()
    const store = service.services.keyStore
    const digest = hashKey('pk_' + 'q'.repeat(32))
    const before = { ...store.stats }
    expect(await store.resolve(digest)).toBeNull()
    for (let i = 0; i < 100; i++) expect(await store.resolve(digest)).toBeNull()
    // One miss read the database; the hundred after it were answered by the negative cache.
    expect(store.stats.miss - before.miss).toBe(1)
    expect(store.stats.negative - before.negative).toBe(100)
  })
})

describe('keys never leak', () => {
  test('no full key reaches a log line, even when requests fail', async () => {
    const lines: string[] = []
    const service = await testService({ logger: createLogger({ write: (l) => lines.push(l) }), logRequests: true })
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId)
    await call(service, '/api/v0/whoami', { key, origin: 'https://evil.io' })
    await call(service, `/api/v0/whoami?key=${key}`, {})
    await call(service, '/api/v0/nowhere', { key })
    expect(lines.join('\n')).not.toContain(key)
  })
})
