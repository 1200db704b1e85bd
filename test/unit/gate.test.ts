import { describe, expect, test } from 'bun:test'
import { compileIpMatcher } from '../../src/access/allowed-ips.ts'
import type { RequestFacts } from '../../src/access/chain.ts'
import { createGate, type GateDeps } from '../../src/access/gate.ts'
import { generateKey } from '../../src/access/key-format.ts'
import type { ActiveKey, KeyStore } from '../../src/access/key-store.ts'
import { createLastUsedRecorder, type LastUsedRecorder } from '../../src/access/last-used.ts'
import { compileOriginMatcher } from '../../src/access/origin/index.ts'
import { createFailureBudget, type FailureBudget } from '../../src/access/rate-limit/failure-budget.ts'
import { createRateLimiter } from '../../src/access/rate-limit/limiter.ts'
import type { Scope } from '../../src/access/scopes.ts'
import type { Budget } from '../../src/config.ts'
import { ApiError } from '../../src/errors.ts'
import type { UsageRecorder } from '../../src/usage/recorder.ts'

const key: ActiveKey = {
  id: '0190a000-0000-7000-8000-000000000001',
  businessId: '0190a000-0000-7000-8000-000000000002',
  type: 'private',
  name: 'backend',
  scopes: new Set(['ANALYTICS_READ']),
  scopeList: ['ANALYTICS_READ' as Scope],
  allowedOrigins: [],
  origins: null,
  reportOnly: false,
  allowedIps: [],
  ips: null,
  ipReportOnly: false,
  expiresAt: null,
  revoked: false,
  rateLimit: { limit: 2, windowSeconds: 1 },
  lastUsedAt: null,
}

test('a request whose key was read from the database meets the budget at the time the key arrived, not when it came in', async () => {
  // The first lookup waits (a cache miss during a slow database); the next is cached.
  let release: (found: ActiveKey) => void = () => {}
  let lookups = 0
  const keys = {
    resolve: async () => (lookups++ === 0 ? new Promise<ActiveKey>((resolve) => (release = resolve)) : key),
  } as unknown as KeyStore
  let clock = 0
  const gate = createGate({
    keys,
    // check() never records a use (count() does), so the recorder needs no database.
    lastUsed: createLastUsedRecorder(null as never),
    rateLimits: {
      limiter: createRateLimiter(),
      defaults: { public: key.rateLimit!, private: key.rateLimit! },
      authFailures: createFailureBudget({ limit: 100, windowSeconds: 60 }),
      clock: () => clock,
    },
  })
  const request = {
    authorization: `Bearer sk_${'a'.repeat(32)}`,
    origin: null,
    method: 'GET',
    path: '/api/v0/analytics',
    clientAddress: () => '192.0.2.1',
  }
  const rule = { scope: 'ANALYTICS_READ' as Scope, public: false }

  const slow = gate.check(request, rule)
  // Five seconds later, while the first still waits for its key, a second request is served.
  clock = 5_000
  expect(await gate.check(request, rule)).toMatchObject({ key })
  expect(lookups).toBe(2)
  release(key)
  // The budget holds two a second: the waiting request is the second at 5 s, not one
  // judged at 0 s against a budget already spent up to 5.5 s.
  const granted = await slow.catch((error: ApiError) => error)
  expect(granted).not.toBeInstanceOf(ApiError)
  expect(granted).toMatchObject({ key })
})

// ---------------------------------------------------------------------------------------
// The gate around the chain: what a refusal answers and counts, and the budgets.

const NOW = 1_764_000_000_000
const SECRET = `sk_${'b'.repeat(32)}`
const ORIGIN = 'https://shop.example.com'
const INVALID_TOKEN = 'Bearer realm="api", error="invalid_token"'
const analytics = { scope: 'ANALYTICS_READ' as Scope, public: false }
const events = { scope: 'ANALYTICS_WRITE' as Scope, public: true }

function aKey(overrides: Partial<ActiveKey> = {}): ActiveKey {
  const scopeList = (overrides.scopeList ?? ['ANALYTICS_READ']) as Scope[]
  return { ...key, rateLimit: null, ...overrides, scopeList, scopes: new Set(scopeList) }
}

function aPublicKey(overrides: Partial<ActiveKey> = {}): ActiveKey {
  return aKey({
    id: '0190a000-0000-7000-8000-0000000000aa',
    type: 'public',
    scopeList: ['ANALYTICS_WRITE'],
    allowedOrigins: [ORIGIN],
    origins: compileOriginMatcher([ORIGIN]),
    ...overrides,
  })
}

type UsageCall = [method: string, ...args: unknown[]]

/** A usage recorder that writes down each call. */
function fakeUsage(): UsageRecorder & { calls: UsageCall[] } {
  const calls: UsageCall[] = []
  return {
    calls,
    accepted: (...args: unknown[]) => calls.push(['accepted', ...args]),
    refused: (...args: unknown[]) => calls.push(['refused', ...args]),
    origin: (...args: unknown[]) => calls.push(['origin', ...args]),
    ip: (...args: unknown[]) => calls.push(['ip', ...args]),
  } as unknown as UsageRecorder & { calls: UsageCall[] }
}

interface Setup {
  found?: ActiveKey | null
  usage?: UsageRecorder | null
  defaults?: { public: Budget; private: Budget }
  authFailures?: FailureBudget
  onRefusal?: (code: string) => void
  onLimited?: (type: string) => void
  onBrowserUse?: (key: ActiveKey, origin: string, at: number) => void
  /** false: the gate's own clocks (performance.now, Date.now). */
  clocks?: boolean
}

/** A gate over a store that knows one key, on clocks the test moves. */
function gateWith(setup: Setup = {}) {
  const usage = setup.usage === null ? undefined : (setup.usage ?? fakeUsage())
  const clocks = { at: 1_000, now: NOW }
  const touched: [string, number][] = []
  const found = setup.found === undefined ? aKey() : setup.found
  const gate = createGate({
    keys: { resolve: async () => found } as unknown as KeyStore,
    lastUsed: { touch: (k: ActiveKey, at: number) => touched.push([k.id, at]) } as unknown as LastUsedRecorder,
    rateLimits: {
      limiter: createRateLimiter(),
      defaults: setup.defaults ?? { public: { limit: 3, windowSeconds: 60 }, private: { limit: 5, windowSeconds: 60 } },
      authFailures: setup.authFailures ?? createFailureBudget({ limit: 100, windowSeconds: 60 }),
      ...(setup.onLimited ? { onLimited: setup.onLimited } : {}),
      ...(setup.clocks === false ? {} : { clock: () => clocks.at }),
    },
    ...(setup.clocks === false ? {} : { now: () => clocks.now }),
    ...(setup.onRefusal ? { onRefusal: setup.onRefusal } : {}),
    ...(setup.onBrowserUse ? { onBrowserUse: setup.onBrowserUse } : {}),
    ...(usage ? { usage } : {}),
  } as GateDeps)
  return { gate, usage: usage as (UsageRecorder & { calls: UsageCall[] }) | undefined, clocks, touched }
}

function requestFrom(address: string, overrides: Partial<RequestFacts> = {}): RequestFacts {
  return {
    authorization: `Bearer ${SECRET}`,
    origin: null,
    method: 'GET',
    path: '/api/v0/analytics',
    clientAddress: () => address,
    ...overrides,
  }
}

/** The ApiError a check throws (fails the test when it grants, or throws anything else). */
async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const outcome = await promise.then(
    (granted) => granted,
    (error: unknown) => error,
  )
  expect(outcome).toBeInstanceOf(ApiError)
  return outcome as ApiError
}

function answer(error: ApiError) {
  return { status: error.status, code: error.code, message: error.message, headers: error.headers }
}

/** A failure budget that writes down what it is asked and told. */
function watchedFailures(): FailureBudget & { recorded: [string, number][] } {
  const recorded: [string, number][] = []
  return { recorded, active: () => false, blocked: () => null, record: (subject, at) => recorded.push([subject, at]) }
}

describe('refusals of the chain: answer, counts, failure budget', () => {
  test('an unknown key: 401 invalid_api_key, counted in the failure budget at the time the key was looked up; no usage (no key)', async () => {
    const failures = watchedFailures()
    const refusals: string[] = []
    const { gate, usage, clocks } = gateWith({ found: null, authFailures: failures, onRefusal: (code) => refusals.push(code) })
    clocks.at = 7_000
    const error = await refusal(gate.check(requestFrom('198.51.100.9'), analytics))
    expect(answer(error)).toEqual({
      status: 401,
      code: 'invalid_api_key',
      message: 'This API key does not exist. Check that you copied the whole key, and that it belongs to this environment.',
      headers: { 'www-authenticate': INVALID_TOKEN },
    })
    expect(failures.recorded).toEqual([['198.51.100.9', 7_000]])
    expect(refusals).toEqual(['invalid_api_key'])
    expect(usage!.calls).toEqual([])
  })

  test('an expired key: counted under the key as refused, and in the failure budget', async () => {
    const failures = watchedFailures()
    const expired = aKey({ expiresAt: NOW })
    const { gate, usage } = gateWith({ found: expired, authFailures: failures })
    const error = await refusal(gate.check(requestFrom('198.51.100.9'), analytics))
    expect(error.code).toBe('expired_api_key')
    expect(error.message).toBe(
      `This API key expired at ${new Date(NOW).toISOString()}. Create a new key, or extend this key's expiry in the dashboard.`,
    )
    expect(usage!.calls).toEqual([['refused', expired.id, 'expired_api_key', NOW]])
    expect(failures.recorded).toEqual([['198.51.100.9', 1_000]])
  })

  test('a refusal without a usage recorder or metrics hook is still the refusal', async () => {
    const { gate } = gateWith({ found: aKey({ expiresAt: NOW }), usage: null })
    expect((await refusal(gate.check(requestFrom('198.51.100.9'), analytics))).code).toBe('expired_api_key')
    const unknown = gateWith({ found: null, usage: null })
    expect((await refusal(unknown.gate.check(requestFrom('198.51.100.9'), analytics))).code).toBe('invalid_api_key')
  })

  test('no key and a malformed key are refused but not counted toward the failure budget', async () => {
    const failures = watchedFailures()
    const refusals: string[] = []
    const { gate } = gateWith({ authFailures: failures, onRefusal: (code) => refusals.push(code) })
    const missing = await refusal(gate.check(requestFrom('198.51.100.9', { authorization: null }), analytics))
    expect(answer(missing)).toEqual({
      status: 401,
      code: 'missing_api_key',
      message: 'No API key was sent. Send it as the header "Authorization: Bearer <key>".',
      headers: { 'www-authenticate': 'Bearer realm="api"' },
    })
    const malformed = await refusal(gate.check(requestFrom('198.51.100.9', { authorization: 'Bearer sk_short' }), analytics))
    expect(malformed.code).toBe('malformed_api_key')
    expect(malformed.headers).toEqual({ 'www-authenticate': INVALID_TOKEN })
    expect(failures.recorded).toEqual([])
    expect(refusals).toEqual(['missing_api_key', 'malformed_api_key'])
  })

  test('a key whose checksum fails is malformed, and counts toward the failure budget', async () => {
    const failures = watchedFailures()
    const good = generateKey('private')
    const mangled = good.slice(0, -1) + (good.endsWith('0') ? '1' : '0')
    const { gate } = gateWith({ authFailures: failures })
    const error = await refusal(gate.check(requestFrom('198.51.100.9', { authorization: `Bearer ${mangled}` }), analytics))
    expect(error.code).toBe('malformed_api_key')
    expect(failures.recorded).toEqual([['198.51.100.9', 1_000]])
  })

  test('a refused origin: 403, the origin counted as refused under the key, and in the failure budget; no RateLimit headers for a public key', async () => {
    const failures = watchedFailures()
    const pub = aPublicKey()
    const { gate, usage } = gateWith({ found: pub, authFailures: failures })
    const error = await refusal(gate.check(requestFrom('203.0.113.5', { origin: 'https://evil.example.com' }), events))
    expect(answer(error)).toEqual({
      status: 403,
      code: 'origin_not_allowed',
      message:
        'Origin "https://evil.example.com" is not allowed: this key allows "https://shop.example.com". To allow it, add "https://evil.example.com"',
      headers: undefined,
    })
    expect(usage!.calls).toEqual([
      ['refused', pub.id, 'origin_not_allowed', NOW],
      ['origin', pub.id, 'https://evil.example.com', false, NOW],
    ])
    expect(failures.recorded).toEqual([['203.0.113.5', 1_000]])
  })

  test('a report-only key refused for the endpoint: the origin is counted as reported, the refusal is not budgeted', async () => {
    const failures = watchedFailures()
    const pub = aPublicKey({ reportOnly: true })
    const { gate, usage } = gateWith({ found: pub, authFailures: failures })
    const error = await refusal(gate.check(requestFrom('203.0.113.5', { origin: 'https://evil.example.com' }), analytics))
    expect(answer(error)).toEqual({
      status: 403,
      code: 'public_key_not_allowed',
      message:
        'Public keys (pk_) cannot call GET /api/v0/analytics. Call it from your server with a private key (sk_) that holds the scope it needs.',
      headers: undefined,
    })
    expect(usage!.calls).toEqual([
      ['refused', pub.id, 'public_key_not_allowed', NOW],
      ['origin', pub.id, 'https://evil.example.com', true, NOW],
    ])
    expect(failures.recorded).toEqual([])
  })

  test("a refused address: 403 ip_not_allowed with the key's RateLimit headers, the address counted as refused, and budgeted", async () => {
    const failures = watchedFailures()
    const bound = aKey({ allowedIps: ['192.0.2.1'], ips: compileIpMatcher(['192.0.2.1']), rateLimit: { limit: 4, windowSeconds: 60 } })
    const { gate, usage } = gateWith({ found: bound, authFailures: failures })
    // One granted request first: the refusal shows the budget as it stands, that one spent.
    await gate.check(requestFrom('192.0.2.1'), analytics)
    const error = await refusal(gate.check(requestFrom('198.51.100.7'), analytics))
    expect(answer(error)).toEqual({
      status: 403,
      code: 'ip_not_allowed',
      message:
        "This private key may only be used from 192.0.2.1; this request came from 198.51.100.7. Add 198.51.100.7 (or its range) to the key's allowed IPs in the dashboard or with PATCH /admin/v0/keys/:id, or call from an allowed address.",
      headers: { 'ratelimit-limit': '4', 'ratelimit-remaining': '3', 'ratelimit-reset': '15' },
    })
    expect(usage!.calls).toEqual([
      ['refused', bound.id, 'ip_not_allowed', NOW],
      ['ip', bound.id, '198.51.100.7', false, NOW],
    ])
    expect(failures.recorded).toEqual([['198.51.100.7', 1_000]])
  })

  test('report-only addresses: a refusal for the scope counts the address as reported, and is not budgeted', async () => {
    const failures = watchedFailures()
    const bound = aKey({ allowedIps: ['192.0.2.1'], ips: compileIpMatcher(['192.0.2.1']), ipReportOnly: true, scopeList: [] })
    const { gate, usage } = gateWith({ found: bound, authFailures: failures })
    const error = await refusal(gate.check(requestFrom('198.51.100.7'), analytics))
    expect(answer(error)).toEqual({
      status: 403,
      code: 'insufficient_scope',
      message: "This endpoint needs the scope ANALYTICS_READ; the key holds none. Add ANALYTICS_READ to the key's scopes.",
      // The key has no budget of its own: the private default's, untouched.
      headers: {
        'www-authenticate': 'Bearer realm="api", error="insufficient_scope", scope="ANALYTICS_READ"',
        'ratelimit-limit': '5',
        'ratelimit-remaining': '5',
        'ratelimit-reset': '0',
      },
    })
    expect(usage!.calls).toEqual([
      ['refused', bound.id, 'insufficient_scope', NOW],
      ['ip', bound.id, '198.51.100.7', true, NOW],
    ])
    expect(failures.recorded).toEqual([])
  })

  test('a public key refused for its scope carries only its challenge', async () => {
    const pub = aPublicKey({ scopeList: [] })
    const { gate } = gateWith({ found: pub })
    const error = await refusal(gate.check(requestFrom('203.0.113.5', { origin: ORIGIN }), events))
    expect(error.headers).toEqual({ 'www-authenticate': 'Bearer realm="api", error="insufficient_scope", scope="ANALYTICS_WRITE"' })
  })

  test("each of the four budgeted refusals counts toward the address's failure budget", async () => {
    const bound = ['192.0.2.1']
    const cases: [ActiveKey | null, Partial<RequestFacts>, string][] = [
      [null, {}, 'invalid_api_key'],
      [aKey({ revoked: true }), {}, 'invalid_api_key'],
      [aKey({ expiresAt: NOW - 1 }), {}, 'expired_api_key'],
      [aPublicKey(), { origin: 'https://evil.example.com' }, 'origin_not_allowed'],
      [aKey({ allowedIps: bound, ips: compileIpMatcher(bound) }), {}, 'ip_not_allowed'],
    ]
    for (const [found, overrides, code] of cases) {
      const failures = watchedFailures()
      const { gate } = gateWith({ found, authFailures: failures })
      expect((await refusal(gate.check(requestFrom('198.51.100.7', overrides), events))).code).toBe(code as never)
      expect(failures.recorded).toEqual([['198.51.100.7', 1_000]])
    }
  })

  test('an address over its failure budget is refused 429 before any lookup, until the failures age out', async () => {
    let lookups = 0
    const failures = createFailureBudget({ limit: 3, windowSeconds: 60 })
    const gate = createGate({
      keys: {
        resolve: async () => {
          lookups++
          return null
        },
      } as unknown as KeyStore,
      lastUsed: createLastUsedRecorder(null as never),
      rateLimits: {
        limiter: createRateLimiter(),
        defaults: { public: key.rateLimit!, private: key.rateLimit! },
        authFailures: failures,
        clock: () => at,
      },
    })
    let at = 0
    for (let i = 0; i < 3; i++) expect((await refusal(gate.check(requestFrom('198.51.100.7'), analytics))).code).toBe('invalid_api_key')
    at = 1_000
    const blocked = await refusal(gate.check(requestFrom('198.51.100.7'), analytics))
    expect(answer(blocked)).toEqual({
      status: 429,
      code: 'rate_limited',
      message:
        'Too many requests with unknown, revoked or expired keys or refused origins or addresses came from this address. Retry after 59 s (the Retry-After header); spread requests out, or ask for a higher limit on the key.',
      headers: { 'retry-after': '59' },
    })
    expect(lookups).toBe(3)
    // Another address is not blocked.
    expect((await refusal(gate.check(requestFrom('198.51.100.8'), analytics))).code).toBe('invalid_api_key')
  })

  test('an address whose last failure is more than a window old is let through, whatever the estimate from fixed windows says', async () => {
    const failures = createFailureBudget({ limit: 3, windowSeconds: 60 })
    for (let i = 0; i < 6; i++) failures.record('198.51.100.7', 0)
    const { gate, clocks } = gateWith({ authFailures: failures })
    // 60.5 s on: the six failures are all more than a window old, yet the two-window estimate
    // (6 x (1 - 0.5/60), about 5.95) would still be over the limit.
    clocks.at = 60_500
    expect(failures.blocked('198.51.100.7', 60_500)).not.toBeNull()
    expect(await gate.check(requestFrom('198.51.100.7'), analytics)).toMatchObject({ key: { id: key.id } })
  })
})

describe('budgets of granted keys', () => {
  test('a private key is granted with its RateLimit headers, and refused 429 past its own budget wherever it calls from', async () => {
    const limited: string[] = []
    const own = aKey({ rateLimit: { limit: 2, windowSeconds: 60 } })
    const { gate, usage } = gateWith({ found: own, onLimited: (type) => limited.push(type) })
    expect(await gate.check(requestFrom('192.0.2.1', { origin: ORIGIN }), analytics)).toEqual({
      key: own,
      origin: ORIGIN,
      rateLimitHeaders: { 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '30' },
    })
    expect((await gate.check(requestFrom('192.0.2.2'), analytics)).rateLimitHeaders).toEqual({
      'ratelimit-limit': '2',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '60',
    })
    const error = await refusal(gate.check(requestFrom('192.0.2.3'), analytics))
    expect(answer(error)).toEqual({
      status: 429,
      code: 'rate_limited',
      message:
        "This key's rate limit of 2 requests is used up. Retry after 30 s (the Retry-After header); spread requests out, or ask for a higher limit on the key.",
      headers: { 'ratelimit-limit': '2', 'ratelimit-remaining': '0', 'ratelimit-reset': '60', 'retry-after': '30' },
    })
    expect(limited).toEqual(['private'])
    // The first request came with an Origin: a private key used from a browser is recorded as an origin it does not allow, served.
    expect(usage!.calls).toEqual([
      ['origin', own.id, ORIGIN, true, NOW],
      ['refused', own.id, 'rate_limited', NOW],
    ])
  })

  test('a private key sent with an Origin is told as a browser use, refused or not; a public key, or no Origin, is not', async () => {
    const uses: [string, string, number][] = []
    const onBrowserUse = (key: { id: string }, origin: string, at: number) => void uses.push([key.id, origin, at])
    const priv = aKey()
    const { gate } = gateWith({ found: priv, onBrowserUse })
    await gate.check(requestFrom('192.0.2.1', { origin: ORIGIN }), analytics)
    await gate.check(requestFrom('192.0.2.1'), analytics)
    const scoped = gateWith({ found: aKey({ scopeList: ['MEMORY_READ'] }), onBrowserUse })
    await refusal(scoped.gate.check(requestFrom('192.0.2.1', { origin: 'https://shop.example' }), analytics))
    const pub = gateWith({ found: aPublicKey(), onBrowserUse })
    await pub.gate.check(requestFrom('192.0.2.1', { origin: ORIGIN }), events)
    expect(uses.map(([, origin]) => origin)).toEqual([ORIGIN, 'https://shop.example'])
    expect(uses[0]![0]).toBe(priv.id)
    // Told at the wall clock's time, as the usage it is counted with.
    expect(uses.map(([, , at]) => at)).toEqual([NOW, NOW])
  })

  test('a private key sent with an Origin, without a usage recorder or a browser-use hook, is granted all the same', async () => {
    const priv = aKey()
    const { gate } = gateWith({ found: priv, usage: null })
    const granted = await gate.check(requestFrom('192.0.2.1', { origin: ORIGIN }), analytics)
    expect(granted.key.id).toBe(priv.id)
    expect(granted.origin).toBe(ORIGIN)
  })

  test("a key without a budget of its own has its type's default", async () => {
    const { gate } = gateWith({ found: aKey() })
    expect((await gate.check(requestFrom('192.0.2.1'), analytics)).rateLimitHeaders).toMatchObject({ 'ratelimit-limit': '5' })
    const pub = gateWith({ found: aPublicKey() })
    for (let i = 0; i < 3; i++) await pub.gate.check(requestFrom('203.0.113.1', { origin: ORIGIN }), events)
    const error = await refusal(pub.gate.check(requestFrom('203.0.113.1', { origin: ORIGIN }), events))
    expect(error.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': '0' })
  })

  test('a 429 without a usage recorder or a metrics hook is still the 429', async () => {
    const { gate } = gateWith({ found: aKey({ rateLimit: { limit: 1, windowSeconds: 60 } }), usage: null })
    await gate.check(requestFrom('192.0.2.1'), analytics)
    expect((await refusal(gate.check(requestFrom('192.0.2.1'), analytics))).code).toBe('rate_limited')
  })

  test("on the gate's own clock a budget holds too", async () => {
    const { gate } = gateWith({ found: aKey({ rateLimit: { limit: 2, windowSeconds: 60 } }), clocks: false })
    await gate.check(requestFrom('192.0.2.1'), analytics)
    await gate.check(requestFrom('192.0.2.1'), analytics)
    expect((await refusal(gate.check(requestFrom('192.0.2.1'), analytics))).code).toBe('rate_limited')
  })

  test('a public key: each visitor has its own budget, granted without RateLimit headers', async () => {
    const limited: string[] = []
    const pub = aPublicKey({ rateLimit: { limit: 2, windowSeconds: 60 } })
    const { gate, usage } = gateWith({ found: pub, onLimited: (type) => limited.push(type) })
    const from = (address: string) => requestFrom(address, { origin: ORIGIN })
    expect(await gate.check(from('203.0.113.1'), events)).toEqual({ key: pub, origin: ORIGIN, rateLimitHeaders: null })
    await gate.check(from('203.0.113.1'), events)
    const error = await refusal(gate.check(from('203.0.113.1'), events))
    expect(answer(error)).toEqual({
      status: 429,
      code: 'rate_limited',
      message:
        "This key's rate limit of 2 requests is used up. Retry after 30 s (the Retry-After header); spread requests out, or ask for a higher limit on the key.",
      headers: { 'ratelimit-limit': '2', 'ratelimit-remaining': '0', 'ratelimit-reset': '60', 'retry-after': '30' },
    })
    // Another visitor still has its whole budget.
    expect(await gate.check(from('203.0.113.2'), events)).toEqual({ key: pub, origin: ORIGIN, rateLimitHeaders: null })
    expect(limited).toEqual(['public'])
    expect(usage!.calls).toEqual([['refused', pub.id, 'rate_limited', NOW]])
  })

  test("a public key's visitors together meet its ceiling (100 visitors' budgets), and a visitor over its own budget does not spend it", async () => {
    const pub = aPublicKey({ rateLimit: { limit: 1, windowSeconds: 60 } })
    const { gate } = gateWith({ found: pub })
    const from = (address: string) => requestFrom(address, { origin: ORIGIN })
    await gate.check(from('198.51.100.1'), events)
    // Refused for its own budget, again and again: none of these count toward the ceiling.
    for (let i = 0; i < 5; i++)
      expect((await refusal(gate.check(from('198.51.100.1'), events))).message).toStartWith("This key's rate limit")
    for (let i = 2; i <= 100; i++) await gate.check(from(`198.51.100.${i}`), events)
    const error = await refusal(gate.check(from('198.51.100.101'), events))
    expect(answer(error)).toEqual({
      status: 429,
      code: 'rate_limited',
      message:
        "This public key's ceiling of 100 requests from all its visitors together is used up. Retry after 1 s (the Retry-After header); spread requests out, or ask for a higher limit on the key.",
      headers: { 'ratelimit-limit': '100', 'ratelimit-remaining': '0', 'ratelimit-reset': '60', 'retry-after': '1' },
    })
  })

  test("each public key has its own ceiling and its own visitors' budgets", async () => {
    const one = aPublicKey({ rateLimit: { limit: 1, windowSeconds: 60 } })
    const other = aPublicKey({ id: '0190a000-0000-7000-8000-0000000000bb', rateLimit: { limit: 1, windowSeconds: 60 } })
    let found = one
    const gate = createGate({
      keys: { resolve: async () => found } as unknown as KeyStore,
      lastUsed: createLastUsedRecorder(null as never),
      rateLimits: {
        limiter: createRateLimiter(),
        defaults: { public: key.rateLimit!, private: key.rateLimit! },
        authFailures: createFailureBudget({ limit: 100, windowSeconds: 60 }),
        clock: () => 0,
      },
    })
    const from = (address: string) => requestFrom(address, { origin: ORIGIN })
    for (let i = 1; i <= 100; i++) await gate.check(from(`198.51.100.${i}`), events)
    expect((await refusal(gate.check(from('198.51.100.101'), events))).message).toStartWith("This public key's ceiling of 100")
    found = other
    expect(await gate.check(from('198.51.100.1'), events)).toMatchObject({ key: other })
    expect(await gate.check(from('198.51.100.102'), events)).toMatchObject({ key: other })
  })

  test('report-only: a served origin or address is counted as reported under the key, and nothing else is counted by check()', async () => {
    const pub = aPublicKey({ reportOnly: true })
    const { gate, usage } = gateWith({ found: pub })
    await gate.check(requestFrom('203.0.113.1', { origin: 'https://evil.example.com' }), events)
    await gate.check(requestFrom('203.0.113.1', { origin: ORIGIN }), events)
    expect(usage!.calls).toEqual([['origin', pub.id, 'https://evil.example.com', true, NOW]])

    const bound = aKey({ allowedIps: ['192.0.2.1'], ips: compileIpMatcher(['192.0.2.1']), ipReportOnly: true })
    const ips = gateWith({ found: bound })
    await ips.gate.check(requestFrom('198.51.100.7'), analytics)
    await ips.gate.check(requestFrom('192.0.2.1'), analytics)
    expect(ips.usage!.calls).toEqual([['ip', bound.id, '198.51.100.7', true, NOW]])
  })

  test('report-only without a usage recorder: served', async () => {
    const { gate } = gateWith({ found: aPublicKey({ reportOnly: true }), usage: null })
    expect(await gate.check(requestFrom('203.0.113.1', { origin: 'https://evil.example.com' }), events)).toMatchObject({
      origin: 'https://evil.example.com',
    })
    const bound = aKey({ allowedIps: ['192.0.2.1'], ips: compileIpMatcher(['192.0.2.1']), ipReportOnly: true })
    const ips = gateWith({ found: bound, usage: null })
    expect(await ips.gate.check(requestFrom('198.51.100.7'), analytics)).toMatchObject({ key: bound })
  })
})

describe('count: only a 2xx is a use', () => {
  test("200 and 299 are uses: last used moves, accepted under the route's scope", async () => {
    const { gate, usage, touched, clocks } = gateWith()
    const grant = await gate.check(requestFrom('192.0.2.1'), analytics)
    clocks.now = NOW + 5
    gate.count(grant, analytics, 200, undefined)
    gate.count(grant, { scope: null, public: false }, 299, undefined)
    expect(touched).toEqual([
      [key.id, NOW + 5],
      [key.id, NOW + 5],
    ])
    expect(usage!.calls).toEqual([
      ['accepted', key.id, 'ANALYTICS_READ', NOW + 5],
      ['accepted', key.id, null, NOW + 5],
    ])
  })

  test('anything else is refused under its error code, or http_<status>', async () => {
    const { gate, usage, touched } = gateWith()
    const grant = await gate.check(requestFrom('192.0.2.1'), analytics)
    gate.count(grant, analytics, 199, undefined)
    gate.count(grant, analytics, 300, undefined)
    gate.count(grant, analytics, 404, 'not_found')
    gate.count(grant, analytics, 500, undefined)
    expect(touched).toEqual([])
    expect(usage!.calls).toEqual([
      ['refused', key.id, 'http_199', NOW],
      ['refused', key.id, 'http_300', NOW],
      ['refused', key.id, 'not_found', NOW],
      ['refused', key.id, 'http_500', NOW],
    ])
  })

  test('without a usage recorder, count only moves last used', async () => {
    const { gate, touched } = gateWith({ usage: null })
    const grant = await gate.check(requestFrom('192.0.2.1'), analytics)
    gate.count(grant, analytics, 200, undefined)
    gate.count(grant, analytics, 404, 'not_found')
    expect(touched).toEqual([[key.id, NOW]])
  })
})
