import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys } from '../../db/schema/index.ts'
import { checksumHolds, hashKey } from '../../src/access/key-format.ts'
import { chainApp } from '../support/chain-app.ts'
import { TEST_AUTHOR, call, errorOf, seedBusiness, type seedKey, testService } from '../support/service.ts'
import { createLogger } from '../../src/observability/log.ts'

// The checks, their order, their answers; through app.handle.

async function setup(options: Parameters<typeof chainApp>[0] = {}) {
  const chain = await chainApp(options)
  const service = await testService()
  const businessId = await seedBusiness(service)
  const make = (o: Parameters<typeof seedKey>[2]) =>
    chain.keys.create(
      businessId,
      {
        type: o?.type ?? 'public',
        name: 'k',
        scopes: o?.scopes ?? (o?.type === 'private' ? ['MEMORY_WRITE'] : ['ANALYTICS_WRITE', 'BLOG_READ']),
        allowedOrigins: o?.allowedOrigins ?? (o?.type === 'private' ? [] : ['example.com']),
        expiresAt: o?.expiresAt ?? null,
        createdBy: 'test',
      },
      TEST_AUTHOR,
    )
  return { ...chain, businessId, make }
}

const ORIGIN = 'https://example.com'

describe('check 1: header present', () => {
  test('no Authorization header answers 401 missing_api_key with a bare Bearer challenge', async () => {
    const { app, reached } = await setup()
    const response = await call({ app }, '/api/v0/public-read', { origin: ORIGIN })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api"')
    expect((await errorOf(response)).code).toBe('missing_api_key')
    expect(reached).toEqual([])
  })

  test('a key in the query string is ignored', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    const response = await call({ app }, `/api/v0/public-read?api_key=${key}&key=${key}`, { origin: ORIGIN })
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('missing_api_key')
  })
})

describe('check 2: Bearer form and key format', () => {
  const good = 'pk_' + 'a'.repeat(32)
  const malformed: [string, string][] = [
    ['another scheme', `Basic ${good}`],
    ['scheme only', 'Bearer'],
    ['scheme and space only', 'Bearer '],
    ['token68 without scheme', good],
    ['a tab instead of a space', `Bearer\t${good}`],
    ['quotes around the key', `Bearer "${good}"`],
    ['two values joined by the fetch API', `Bearer ${good}, Bearer ${good}`],
    ['a body of 19 characters', 'Bearer pk_' + 'a'.repeat(19)],
    ['a body of 41 characters', 'Bearer pk_' + 'a'.repeat(41)],
    ['an unknown prefix', 'Bearer ak_' + 'a'.repeat(32)],
    ['an upper-case prefix', 'Bearer PK_' + 'a'.repeat(32)],
    ['a character outside the alphabet', 'Bearer pk_' + 'a'.repeat(30) + '-a'],
    ['an underscore in the body', 'Bearer pk_' + 'a'.repeat(30) + '_a'],
    ['a trailing dot', `Bearer ${good}.`],
  ]
  test.each(malformed)('%s answers 401 malformed_api_key with error="invalid_token"', async (_, header) => {
    const { app, reached } = await setup()
    const response = await call({ app }, '/api/v0/public-read', { origin: ORIGIN, headers: { authorization: header } })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"')
    const error = await errorOf(response)
    expect(error.code).toBe('malformed_api_key')
    expect(error.message).toContain('pk_')
    expect(reached).toEqual([])
  })

  test('two Authorization header lines are malformed', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    const headers = new Headers()
    headers.append('authorization', `Bearer ${key}`)
    headers.append('authorization', `Bearer ${key}`)
    headers.set('origin', ORIGIN)
    const response = await app.handle(new Request('http://localhost/api/v0/public-read', { headers }))
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('malformed_api_key')
  })

  test.each(['bearer', 'BEARER', 'BeArEr'])('the scheme is case-insensitive (%s)', async (scheme) => {
    const { app, make } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/public-read', { origin: ORIGIN, headers: { authorization: `${scheme} ${key}` } })
    expect(response.status).toBe(200)
  })

  test('keys of 20 and 40 characters are well-formed (unknown, so refused at check 3)', async () => {
    const { app } = await setup()
    for (const body of ['a'.repeat(20), 'Z9'.repeat(20)]) {
      const response = await call({ app }, '/api/v0/public-read', { key: `pk_${body}`, origin: ORIGIN })
      expect((await errorOf(response)).code).toBe('invalid_api_key')
    }
  })
})

describe('check 2: checksummed keys (docs/api.md, "When a key leaks")', () => {
  test('a key the service makes is checksummed, and works', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    expect(key).toMatch(/^pk_[A-Za-z0-9]{36}$/)
    expect(checksumHolds(key)).toBe(true)
    expect((await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN })).status).toBe(200)
  })

  test('a wrong checksum is 401 malformed_api_key, "copy it again", before any lookup; the right key still works', async () => {
    const { app, make, keyStore, reached } = await setup()
    const { key } = await make({})
    // One character of the random part changed: the checksum no longer matches.
    const mangled = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11)
    const lookups = () => keyStore.stats.hit + keyStore.stats.negative + keyStore.stats.miss
    const before = lookups()
    const response = await call({ app }, '/api/v0/public-read', { key: mangled, origin: ORIGIN })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"')
    const error = await errorOf(response)
    expect(error.code).toBe('malformed_api_key')
    expect(error.message).toContain('checksum')
    expect(error.message).toContain('Copy the key again')
    expect(lookups()).toBe(before)
    expect(reached).toEqual([])
    expect((await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN })).status).toBe(200)
  })

  test('a key made before checksums (32 characters) keeps working', async () => {
    const { app, make, db } = await setup()
    const { record } = await make({})
    const older = `pk_${'Q7'.repeat(16)}`
    await db
      .update(apiKeys)
      .set({ keyHash: hashKey(older), publicKey: older })
      .where(eq(apiKeys.id, record.id))
    const response = await call({ app }, '/api/v0/public-read', { key: older, origin: ORIGIN })
    expect(response.status).toBe(200)
  })
})

describe('check 3: key known and not revoked', () => {
  test('an unknown key answers 401 invalid_api_key', async () => {
    const { app, reached } = await setup()
    const response = await call({ app }, '/api/v0/public-read', { key: 'sk_' + 'x'.repeat(32) })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"')
    expect((await errorOf(response)).code).toBe('invalid_api_key')
    expect(reached).toEqual([])
  })

  test('a revoked key answers 401 invalid_api_key on its next request, and keeps its record', async () => {
    const { app, make, keys, businessId, db } = await setup()
    const { key, record } = await make({})
    expect((await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN })).status).toBe(200)
    await keys.revoke(businessId, record.id, TEST_AUTHOR)
    const response = await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN })
    expect(response.status).toBe(401)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_api_key')
    expect(error.message).toContain('revoked')
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, record.id))
    expect(row!.revokedAt).toBeInstanceOf(Date)
  })
})

describe('check 4: not expired', () => {
  test('a key past its expiry answers 401 expired_api_key naming the time', async () => {
    let now = Date.now()
    const { app, make, reached } = await setup({ now: () => now })
    const expiresAt = new Date(now + 60 * 60_000).toISOString()
    const { key } = await make({ expiresAt })
    expect((await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN })).status).toBe(200)
    now += 60 * 60_000
    const response = await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"')
    const error = await errorOf(response)
    expect(error.code).toBe('expired_api_key')
    expect(error.message).toContain(expiresAt)
    expect(reached).toEqual(['public-read'])
  })

  test('a revoked and expired key is refused as invalid (check 3 comes first)', async () => {
    let now = Date.now()
    const { app, make, keys, businessId } = await setup({ now: () => now })
    const { key, record } = await make({ expiresAt: new Date(now + 1000).toISOString() })
    await keys.revoke(businessId, record.id, TEST_AUTHOR)
    now += 5000
    expect((await errorOf(await call({ app }, '/api/v0/public-read', { key, origin: ORIGIN }))).code).toBe('invalid_api_key')
  })
})

describe('check 5: origin of public keys', () => {
  test('an origin outside the list answers 403 origin_not_allowed naming the origin and the list', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({ allowedOrigins: ['example.com', 'localhost:3000'] })
    const response = await call({ app }, '/api/v0/public-read', { key, origin: 'https://evil.io' })
    expect(response.status).toBe(403)
    const error = await errorOf(response)
    expect(error.code).toBe('origin_not_allowed')
    expect(error.message).toContain('https://evil.io')
    expect(error.message).toContain('example.com')
    expect(error.message).toContain('localhost:3000')
    expect(reached).toEqual([])
  })

  test('an expired key from a refused origin is refused as expired (check 4 comes first)', async () => {
    let now = Date.now()
    const { app, make } = await setup({ now: () => now })
    const { key } = await make({ expiresAt: new Date(now + 1000).toISOString() })
    now += 5000
    expect((await errorOf(await call({ app }, '/api/v0/public-read', { key, origin: 'https://evil.io' }))).code).toBe('expired_api_key')
  })

  test('private keys are not bound to origins', async () => {
    const { app, make } = await setup()
    const { key } = await make({ type: 'private', scopes: ['BLOG_READ'] })
    expect((await call({ app }, '/api/v0/public-read', { key, origin: 'https://anything.example' })).status).toBe(200)
  })
})

describe('check 6: public endpoint set', () => {
  test('a public key on a private endpoint answers 403 public_key_not_allowed', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/private-read', { key, origin: ORIGIN })
    expect(response.status).toBe(403)
    const error = await errorOf(response)
    expect(error.code).toBe('public_key_not_allowed')
    expect(error.message).toContain('GET /api/v0/private-read')
    expect(error.message).toContain('private key')
    expect(reached).toEqual([])
  })

  test('HEAD is treated as GET: allowed where GET is public, refused where it is not', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    expect((await call({ app }, '/api/v0/public-read', { method: 'HEAD', key, origin: ORIGIN })).status).toBe(200)
    expect((await call({ app }, '/api/v0/private-read', { method: 'HEAD', key, origin: ORIGIN })).status).toBe(403)
  })

  test('a refused origin on a private endpoint is refused for the origin (check 5 comes first)', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    expect((await errorOf(await call({ app }, '/api/v0/private-read', { key, origin: 'https://evil.io' }))).code).toBe('origin_not_allowed')
  })
})

describe('check 7: scope', () => {
  test('a key without the scope answers 403 insufficient_scope naming it in WWW-Authenticate', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({ type: 'private', scopes: ['MEMORY_READ'] })
    const response = await call({ app }, '/api/v0/private-write', { key, body: { n: 1 } })
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api", error="insufficient_scope", scope="MEMORY_WRITE"')
    const error = await errorOf(response)
    expect(error.code).toBe('insufficient_scope')
    expect(error.message).toContain('MEMORY_WRITE')
    expect(error.message).toContain('MEMORY_READ')
    expect(reached).toEqual([])
  })

  test('a public key on a private endpoint it also lacks the scope for is refused at check 6', async () => {
    const { app, make } = await setup()
    const { key } = await make({ scopes: ['BLOG_READ'] })
    expect((await errorOf(await call({ app }, '/api/v0/private-write', { key, origin: ORIGIN, body: { n: 1 } }))).code).toBe(
      'public_key_not_allowed',
    )
  })
})

describe('check 8: body, after the key', () => {
  test('an invalid body with a good key answers 400 invalid_request naming the field', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/public-write', { key, origin: ORIGIN, body: { n: 'three' } })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('"n"')
    expect(reached).toEqual([])
  })

  test('an invalid body without a key answers 401, not 400: the key is checked first', async () => {
    const { app } = await setup()
    for (const body of ['{not json', '{"n": "three"}']) {
      const response = await call({ app }, '/api/v0/public-write', { origin: ORIGIN, body })
      expect(response.status).toBe(401)
    }
  })

  test('an invalid query without a key answers 401, not 400', async () => {
    const { app } = await setup()
    expect((await call({ app }, '/api/v0/public-read?limit=9999', { origin: ORIGIN })).status).toBe(401)
  })

  test('a body that is not JSON answers 400 invalid_request', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/public-write', { key, origin: ORIGIN, body: '{"n": 1' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).code).toBe('invalid_request')
  })

  test('a body without application/json answers 415 unsupported_media_type', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/public-write', {
      key,
      origin: ORIGIN,
      body: '{"n": 1}',
      headers: { 'content-type': 'text/plain' },
    })
    expect(response.status).toBe(415)
    expect((await errorOf(response)).code).toBe('unsupported_media_type')
    expect(reached).toEqual([])
  })

  const big = JSON.stringify({ n: 1, pad: 'x'.repeat(1024 * 1024) })

  test('a body over 1 MiB answers 413 payload_too_large', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/public-write', {
      key,
      origin: ORIGIN,
      body: big,
      headers: { 'content-length': String(big.length) },
    })
    expect(response.status).toBe(413)
    expect((await errorOf(response)).code).toBe('payload_too_large')
    expect(reached).toEqual([])
  })

  test('a streamed body without Content-Length is cut at 1 MiB with 413', async () => {
    const { app, make, reached } = await setup()
    const { key } = await make({})
    const bytes = new TextEncoder().encode(big)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.slice(i, i + 64 * 1024))
        controller.close()
      },
    })
    const response = await app.handle(
      new Request('http://localhost/api/v0/public-write', {
        method: 'POST',
        body: stream,
        headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'content-type': 'application/json' },
      }),
    )
    expect(response.status).toBe(413)
    expect(reached).toEqual([])
  })

  test('a body exactly at 1 MiB is accepted from a private key, at 64 KiB from a public one', async () => {
    const { app, make } = await setup()
    const padded = (bytes: number) => '{"n": 4, "pad": "' + 'x'.repeat(bytes - 19) + '"}'
    const { key: privateKey } = await make({ type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const body = padded(1024 * 1024)
    expect(new TextEncoder().encode(body).length).toBe(1024 * 1024)
    expect((await call({ app }, '/api/v0/public-write', { key: privateKey, body })).status).toBe(200)
    const { key } = await make({})
    expect((await call({ app }, '/api/v0/public-write', { key, origin: ORIGIN, body: padded(64 * 1024) })).status).toBe(200)
    const over = await call({ app }, '/api/v0/public-write', { key, origin: ORIGIN, body: padded(64 * 1024 + 1) })
    expect(over.status).toBe(413)
    expect((await errorOf(over)).code).toBe('payload_too_large')
  })

  test('application/json with a charset parameter is accepted', async () => {
    const { app, make } = await setup()
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/public-write', {
      key,
      origin: ORIGIN,
      body: '{"n": 2}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ accepted: 2 })
  })
})

describe('answers', () => {
  test('every answer carries X-Request-Id, and errors repeat it in the body', async () => {
    const { app } = await setup()
    const response = await call({ app }, '/api/v0/public-read')
    const id = response.headers.get('x-request-id')
    expect(id).toMatch(/^req_/)
    expect((await errorOf(response)).requestId).toBe(id!)
  })

  test('a failure inside a handler answers 500 internal_error without stack or SQL, logged under the request id', async () => {
    const lines: string[] = []
    const { app, make } = await setup({ logger: createLogger({ write: (l) => lines.push(l) }) })
    const { key } = await make({})
    const response = await call({ app }, '/api/v0/explode', { key, origin: ORIGIN })
    expect(response.status).toBe(500)
    const text = await response.text()
    expect(text).not.toContain('select')
    expect(text).not.toContain('at ')
    const error = JSON.parse(text).error
    expect(error.code).toBe('internal_error')
    expect(lines.some((l) => l.includes(error.requestId))).toBe(true)
    expect(lines.join('\n')).not.toContain(key)
  })
})
