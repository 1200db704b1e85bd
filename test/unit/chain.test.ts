/**
 * The key chain (docs/api.md, "Calling the API") as pure decisions: `authorize` with a
 * key store that answers one built key, no database and no HTTP. What each check refuses,
 * with which message and challenge, and what a decision tells the gate to count.
 */
import { describe, expect, test } from 'bun:test'
import { compileIpMatcher } from '../../src/access/allowed-ips.ts'
import { type AccessDecision, authorize, type RequestFacts } from '../../src/access/chain.ts'
import { generateKey, hashKey } from '../../src/access/key-format.ts'
import type { ActiveKey, KeyStore } from '../../src/access/key-store.ts'
import { compileOriginMatcher } from '../../src/access/origin/index.ts'
import type { RouteAccess, Scope } from '../../src/access/scopes.ts'

const REALM = 'Bearer realm="api"'
const INVALID_TOKEN = 'Bearer realm="api", error="invalid_token"'
const SECRET = `sk_${'a'.repeat(32)}`
const NOW = Date.UTC(2026, 10, 28, 12, 0, 0)

function privateKey(overrides: Partial<ActiveKey> = {}): ActiveKey {
  const scopeList = (overrides.scopeList ?? ['ANALYTICS_READ']) as Scope[]
  return {
    id: 'key-private',
    businessId: 'business-1',
    type: 'private',
    name: 'backend',
    allowedOrigins: [],
    origins: null,
    reportOnly: false,
    allowedIps: [],
    ips: null,
    ipReportOnly: false,
    expiresAt: null,
    revoked: false,
    rateLimit: null,
    lastUsedAt: null,
    ...overrides,
    scopeList,
    scopes: new Set(scopeList),
  }
}

/** A private key bound to `allowedIps`, compiled as the key store does. */
function ipBoundKey(allowedIps: string[], overrides: Partial<ActiveKey> = {}): ActiveKey {
  return privateKey({ allowedIps, ips: compileIpMatcher(allowedIps), ...overrides })
}

function publicKey(allowedOrigins: string[], overrides: Partial<ActiveKey> = {}): ActiveKey {
  return privateKey({
    id: 'key-public',
    type: 'public',
    name: 'site',
    scopeList: ['ANALYTICS_WRITE'],
    allowedOrigins,
    origins: compileOriginMatcher(allowedOrigins),
    ...overrides,
  })
}

/** A store that knows one key (or none), and the digests it was asked for. */
function storeOf(found: ActiveKey | null): KeyStore & { asked: string[] } {
  const asked: string[] = []
  return {
    asked,
    resolve: async (hash: string) => {
      asked.push(hash)
      return found
    },
  } as unknown as KeyStore & { asked: string[] }
}

interface Facts extends RequestFacts {
  /** How many times the chain asked for the client address. */
  readonly addressAsked: () => number
}

function facts(
  overrides: { authorization?: string | null; origin?: string | null; method?: string; path?: string; address?: string } = {},
): Facts {
  let asked = 0
  return {
    authorization: overrides.authorization === undefined ? `Bearer ${SECRET}` : overrides.authorization,
    origin: overrides.origin ?? null,
    method: overrides.method ?? 'GET',
    path: overrides.path ?? '/api/v0/analytics',
    clientAddress: () => {
      asked++
      return overrides.address ?? '192.0.2.10'
    },
    addressAsked: () => asked,
  }
}

const analyticsRead: RouteAccess = { scope: 'ANALYTICS_READ', public: false }
const anyKeyPrivate: RouteAccess = { scope: null, public: false }
const publicWrite: RouteAccess = { scope: 'ANALYTICS_WRITE', public: true }

describe('check 1 and 2: the Authorization header', () => {
  test('no header: missing_api_key with a bare Bearer challenge, no lookup, nothing budgeted', async () => {
    const store = storeOf(privateKey())
    const decision = await authorize(facts({ authorization: null }), analyticsRead, store, NOW)
    expect(decision).toStrictEqual({
      ok: false,
      key: null,
      denial: {
        code: 'missing_api_key',
        message: 'No API key was sent. Send it as the header "Authorization: Bearer <key>".',
        headers: { 'www-authenticate': REALM },
      },
    })
    expect(store.asked).toEqual([])
  })

  test('another scheme: malformed_api_key with the invalid_token challenge, not budgeted', async () => {
    const store = storeOf(privateKey())
    const decision = await authorize(facts({ authorization: `Basic ${SECRET}` }), analyticsRead, store, NOW)
    expect(decision).toStrictEqual({
      ok: false,
      key: null,
      denial: {
        code: 'malformed_api_key',
        message: 'The Authorization header is not of the form "Bearer <key>". Send "Authorization: Bearer pk_..." or "Bearer sk_...".',
        headers: { 'www-authenticate': INVALID_TOKEN },
      },
    })
    expect(store.asked).toEqual([])
  })

  test('a key whose checksum fails: malformed_api_key with invalid_token, budgeted against the address', async () => {
    const good = generateKey('private')
    const mangled = good.slice(0, -1) + (good.endsWith('0') ? '1' : '0')
    const store = storeOf(privateKey())
    const decision = await authorize(facts({ authorization: `Bearer ${mangled}` }), analyticsRead, store, NOW)
    expect(decision).toStrictEqual({
      ok: false,
      key: null,
      denial: {
        code: 'malformed_api_key',
        message:
          "The API key's checksum (its last 6 characters) does not match the rest: a character was lost or changed on the way. Copy the key again from the dashboard.",
        headers: { 'www-authenticate': INVALID_TOKEN },
        budgeted: true,
      },
    })
    expect(store.asked).toEqual([])
  })

  test('a well-formed key is looked up by the SHA-256 of the whole key', async () => {
    const key = privateKey()
    const store = storeOf(key)
    expect(await authorize(facts(), analyticsRead, store, NOW)).toStrictEqual({ ok: true, key })
    expect(store.asked).toEqual([hashKey(SECRET)])
  })
})

describe('check 3: known and not revoked', () => {
  test('an unknown key: invalid_api_key, "does not exist", no key to count under', async () => {
    expect(await authorize(facts(), analyticsRead, storeOf(null), NOW)).toStrictEqual({
      ok: false,
      key: null,
      denial: {
        code: 'invalid_api_key',
        message: 'This API key does not exist. Check that you copied the whole key, and that it belongs to this environment.',
        headers: { 'www-authenticate': INVALID_TOKEN },
      },
    })
  })

  test('a revoked key: invalid_api_key, "has been revoked", and its use is not counted under it', async () => {
    const revoked = privateKey({ revoked: true })
    expect(await authorize(facts(), analyticsRead, storeOf(revoked), NOW)).toStrictEqual({
      ok: false,
      key: null,
      denial: {
        code: 'invalid_api_key',
        message: 'This API key has been revoked. Create a new key in the dashboard (Settings, then Developers) and use it instead.',
        headers: { 'www-authenticate': INVALID_TOKEN },
      },
    })
  })

  test('a revoked key that also expired is refused as revoked', async () => {
    const decision = await authorize(facts(), analyticsRead, storeOf(privateKey({ revoked: true, expiresAt: NOW - 1 })), NOW)
    expect(decision.ok).toBe(false)
    if (!decision.ok) expect(decision.denial.message).toStartWith('This API key has been revoked.')
  })
})

describe('check 4: not expired', () => {
  const expiresAt = Date.UTC(2026, 10, 28, 9, 30, 0)

  test('a key is served until the millisecond before its expiry', async () => {
    const key = privateKey({ expiresAt })
    expect(await authorize(facts(), analyticsRead, storeOf(key), expiresAt - 1)).toStrictEqual({ ok: true, key })
  })

  test('at its expiry a key is refused expired_api_key naming the time, counted under the key', async () => {
    const key = privateKey({ expiresAt })
    const refusal: AccessDecision = {
      ok: false,
      key,
      denial: {
        code: 'expired_api_key',
        message: "This API key expired at 2026-11-28T09:30:00.000Z. Create a new key, or extend this key's expiry in the dashboard.",
        headers: { 'www-authenticate': INVALID_TOKEN },
      },
    }
    expect(await authorize(facts(), analyticsRead, storeOf(key), expiresAt)).toStrictEqual(refusal)
    expect(await authorize(facts(), analyticsRead, storeOf(key), expiresAt + 60_000)).toStrictEqual(refusal)
  })

  test('an expired public key from a refused origin is refused as expired', async () => {
    const key = publicKey(['https://shop.example.com'], { expiresAt })
    const decision = await authorize(facts({ origin: 'https://evil.example.com' }), publicWrite, storeOf(key), expiresAt)
    expect(decision).toMatchObject({ ok: false, key, denial: { code: 'expired_api_key' } })
    expect(decision).not.toHaveProperty('refusedOrigin')
  })
})

describe('check 5: allowed client addresses of private keys', () => {
  test('a key without a list is served from anywhere, and the address is not even asked', async () => {
    const key = privateKey()
    const request = facts({ origin: 'https://anything.example.com' })
    expect(await authorize(request, analyticsRead, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
    expect(request.addressAsked()).toBe(0)
  })

  test('an address in the list is served, with nothing reported', async () => {
    const key = ipBoundKey(['192.0.2.0/24'])
    const request = facts({ address: '192.0.2.77' })
    expect(await authorize(request, analyticsRead, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
    expect(request.addressAsked()).toBe(1)
  })

  test('an address in the list still needs the scope', async () => {
    const key = ipBoundKey(['192.0.2.0/24'], { scopeList: [] })
    expect(await authorize(facts({ address: '192.0.2.77' }), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: false,
      key,
      denial: {
        code: 'insufficient_scope',
        message: "This endpoint needs the scope ANALYTICS_READ; the key holds none. Add ANALYTICS_READ to the key's scopes.",
        headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="ANALYTICS_READ"` },
      },
    })
  })

  test('an address outside the list: ip_not_allowed naming the list, the address and the fix; the address is counted as refused', async () => {
    const key = ipBoundKey(['192.0.2.0/24', '2001:db8::/32'])
    expect(await authorize(facts({ address: '198.51.100.7' }), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: false,
      key,
      refusedIp: '198.51.100.7',
      denial: {
        code: 'ip_not_allowed',
        message:
          "This private key may only be used from 192.0.2.0/24, 2001:db8::/32; this request came from 198.51.100.7. Add 198.51.100.7 (or its range) to the key's allowed IPs in the dashboard or with PATCH /admin/v0/keys/:id, or call from an allowed address.",
      },
    })
  })

  test('a refused address is refused before the scope is looked at', async () => {
    const key = ipBoundKey(['192.0.2.1'], { scopeList: [] })
    const decision = await authorize(facts({ address: '192.0.2.2' }), analyticsRead, storeOf(key), NOW)
    expect(decision).toMatchObject({ ok: false, refusedIp: '192.0.2.2', denial: { code: 'ip_not_allowed' } })
  })

  test('a client "address" that is no IP: the message says the proxy sent it, and offers no entry to add', async () => {
    const key = ipBoundKey(['192.0.2.1'])
    const decision = await authorize(facts({ address: 'unknown' }), analyticsRead, storeOf(key), NOW)
    expect(decision).toStrictEqual({
      ok: false,
      key,
      refusedIp: 'unknown',
      denial: {
        code: 'ip_not_allowed',
        message:
          'This private key may only be used from 192.0.2.1; this request came from unknown. "unknown" is not an IP address: the proxy in front of the service passed it in X-Forwarded-For, and no allowed-IPs entry can match it. Fix what the proxy sends, or call from an allowed address.',
      },
    })
  })

  test('a list of ten is named whole; past ten, the first ten and how many more', async () => {
    const ten = Array.from({ length: 10 }, (_, i) => `192.0.2.${i + 1}`)
    const message = async (list: string[]) => {
      const decision = await authorize(facts({ address: '198.51.100.7' }), analyticsRead, storeOf(ipBoundKey(list)), NOW)
      return decision.ok ? null : decision.denial.message
    }
    expect(await message(ten)).toStartWith(`This private key may only be used from ${ten.join(', ')}; this request came from 198.51.100.7.`)
    expect(await message([...ten, '192.0.2.11'])).toStartWith(
      `This private key may only be used from ${ten.join(', ')} and 1 more; this request came from 198.51.100.7.`,
    )
    expect(await message([...ten, '192.0.2.11', '192.0.2.12', '192.0.2.13'])).toStartWith(
      `This private key may only be used from ${ten.join(', ')} and 3 more; this request came from`,
    )
  })

  test('report-only: an address outside the list is served and reported', async () => {
    const key = ipBoundKey(['192.0.2.1'], { ipReportOnly: true })
    expect(await authorize(facts({ address: '198.51.100.7' }), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: true,
      key,
      reportedIp: '198.51.100.7',
    })
  })

  test('report-only: an address in the list is served with nothing reported', async () => {
    const key = ipBoundKey(['192.0.2.1'], { ipReportOnly: true })
    expect(await authorize(facts({ address: '192.0.2.1' }), analyticsRead, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
  })

  test('report-only: an address outside the list lacking the scope is refused for the scope, and the address still reported', async () => {
    const key = ipBoundKey(['192.0.2.1'], { ipReportOnly: true, scopeList: ['MEMORY_READ'] })
    expect(await authorize(facts({ address: '198.51.100.7' }), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: false,
      key,
      reportedIp: '198.51.100.7',
      denial: {
        code: 'insufficient_scope',
        message: "This endpoint needs the scope ANALYTICS_READ; the key holds MEMORY_READ. Add ANALYTICS_READ to the key's scopes.",
        headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="ANALYTICS_READ"` },
      },
    })
  })
})

describe('check 5: allowed origins of public keys', () => {
  const origins = ['https://shop.example.com']

  test('an allowed origin is served, with nothing reported, and the address is not asked', async () => {
    const key = publicKey(origins)
    const request = facts({ origin: 'https://shop.example.com' })
    expect(await authorize(request, publicWrite, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
    expect(request.addressAsked()).toBe(0)
  })

  test('an origin outside the list: origin_not_allowed naming the origin and the list, the origin counted as refused', async () => {
    const key = publicKey(origins)
    expect(await authorize(facts({ origin: 'https://evil.example.com' }), publicWrite, storeOf(key), NOW)).toStrictEqual({
      ok: false,
      key,
      refusedOrigin: 'https://evil.example.com',
      denial: {
        code: 'origin_not_allowed',
        message:
          'Origin "https://evil.example.com" is not allowed: this key allows "https://shop.example.com". To allow it, add "https://evil.example.com"',
      },
    })
  })

  test('no Origin header at all is refused too, and counted as a refused null origin', async () => {
    const key = publicKey(origins)
    const decision = await authorize(facts({ origin: null }), publicWrite, storeOf(key), NOW)
    expect(decision).toMatchObject({ ok: false, key, refusedOrigin: null, denial: { code: 'origin_not_allowed' } })
  })

  test('a refused origin on a private endpoint is refused for the origin first', async () => {
    const key = publicKey(origins)
    const decision = await authorize(facts({ origin: 'https://evil.example.com' }), analyticsRead, storeOf(key), NOW)
    expect(decision).toMatchObject({ ok: false, refusedOrigin: 'https://evil.example.com', denial: { code: 'origin_not_allowed' } })
  })

  test('report-only: an origin outside the list is served and reported', async () => {
    const key = publicKey(origins, { reportOnly: true })
    expect(await authorize(facts({ origin: 'https://evil.example.com' }), publicWrite, storeOf(key), NOW)).toStrictEqual({
      ok: true,
      key,
      reportedOrigin: 'https://evil.example.com',
    })
  })

  test('report-only: a missing Origin is served and reported as null', async () => {
    const key = publicKey(origins, { reportOnly: true })
    expect(await authorize(facts({ origin: null }), publicWrite, storeOf(key), NOW)).toStrictEqual({ ok: true, key, reportedOrigin: null })
  })

  test('report-only: an allowed origin is served with nothing reported', async () => {
    const key = publicKey(origins, { reportOnly: true })
    expect(await authorize(facts({ origin: 'https://shop.example.com' }), publicWrite, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
  })

  test('report-only: a refused origin on a private endpoint is refused for the endpoint, the origin still reported', async () => {
    const key = publicKey(origins, { reportOnly: true })
    const decision = await authorize(
      facts({ origin: 'https://evil.example.com', method: 'DELETE', path: '/api/v0/persons/p1' }),
      anyKeyPrivate,
      storeOf(key),
      NOW,
    )
    expect(decision).toStrictEqual({
      ok: false,
      key,
      reportedOrigin: 'https://evil.example.com',
      denial: {
        code: 'public_key_not_allowed',
        message:
          'Public keys (pk_) cannot call DELETE /api/v0/persons/p1. Call it from your server with a private key (sk_) that holds the scope it needs.',
      },
    })
  })

  test('report-only with an allowed origin: a refusal carries no reported origin', async () => {
    const key = publicKey(origins, { reportOnly: true })
    const decision = await authorize(facts({ origin: 'https://shop.example.com' }), anyKeyPrivate, storeOf(key), NOW)
    expect(decision).toStrictEqual({
      ok: false,
      key,
      denial: {
        code: 'public_key_not_allowed',
        message:
          'Public keys (pk_) cannot call GET /api/v0/analytics. Call it from your server with a private key (sk_) that holds the scope it needs.',
      },
    })
  })

  test('private keys are not bound to origins: any Origin is served', async () => {
    const key = privateKey()
    expect(await authorize(facts({ origin: 'https://evil.example.com' }), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: true,
      key,
    })
  })
})

describe('check 6 and 7: the public endpoint set, then the scope', () => {
  const allowed = 'https://shop.example.com'

  test('a public key on a private endpoint is refused public_key_not_allowed, even holding the scope', async () => {
    const key = publicKey([allowed], { scopeList: ['ANALYTICS_READ'] })
    expect(await authorize(facts({ origin: allowed }), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: false,
      key,
      denial: {
        code: 'public_key_not_allowed',
        message:
          'Public keys (pk_) cannot call GET /api/v0/analytics. Call it from your server with a private key (sk_) that holds the scope it needs.',
      },
    })
  })

  test('a public key on a public endpoint without its scope is refused insufficient_scope', async () => {
    const key = publicKey([allowed], { scopeList: ['BLOG_READ', 'FLOW_TRIGGER'] })
    expect(
      await authorize(facts({ origin: allowed, method: 'POST', path: '/api/v0/events' }), publicWrite, storeOf(key), NOW),
    ).toStrictEqual({
      ok: false,
      key,
      denial: {
        code: 'insufficient_scope',
        message:
          "This endpoint needs the scope ANALYTICS_WRITE; the key holds BLOG_READ, FLOW_TRIGGER. Add ANALYTICS_WRITE to the key's scopes.",
        headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="ANALYTICS_WRITE"` },
      },
    })
  })

  test('a private key may call a public endpoint, and a private one with the scope', async () => {
    const key = privateKey({ scopeList: ['ANALYTICS_READ', 'ANALYTICS_WRITE'] })
    expect(await authorize(facts(), publicWrite, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
    expect(await authorize(facts(), analyticsRead, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
  })

  test('a route needing no scope serves any key, even one with no scopes', async () => {
    const key = privateKey({ scopeList: [] })
    expect(await authorize(facts(), anyKeyPrivate, storeOf(key), NOW)).toStrictEqual({ ok: true, key })
    const pub = publicKey([allowed], { scopeList: [] })
    expect(await authorize(facts({ origin: allowed }), { scope: null, public: true }, storeOf(pub), NOW)).toStrictEqual({
      ok: true,
      key: pub,
    })
  })

  test('a private key without the scope: insufficient_scope naming what it holds', async () => {
    const key = privateKey({ scopeList: ['MEMORY_READ', 'BLOG_WRITE'] })
    expect(await authorize(facts(), analyticsRead, storeOf(key), NOW)).toStrictEqual({
      ok: false,
      key,
      denial: {
        code: 'insufficient_scope',
        message:
          "This endpoint needs the scope ANALYTICS_READ; the key holds MEMORY_READ, BLOG_WRITE. Add ANALYTICS_READ to the key's scopes.",
        headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="ANALYTICS_READ"` },
      },
    })
  })
})
