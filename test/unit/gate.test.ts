import { expect, test } from 'bun:test'
import { createGate } from '../../src/access/gate.ts'
import type { ActiveKey, KeyStore } from '../../src/access/key-store.ts'
import { createLastUsedRecorder } from '../../src/access/last-used.ts'
import { createFailureBudget } from '../../src/access/rate-limit/failure-budget.ts'
import { createRateLimiter } from '../../src/access/rate-limit/limiter.ts'
import type { Scope } from '../../src/access/scopes.ts'
import { ApiError } from '../../src/errors.ts'

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
