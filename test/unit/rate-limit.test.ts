import { describe, expect, test } from 'bun:test'
import { budgetSubject, createClientAddressRule, parseTrustedProxies } from '../../src/shared/client-address.ts'
import { gcra, standing } from '../../src/access/rate-limit/gcra.ts'
import { createFailureBudget } from '../../src/access/rate-limit/failure-budget.ts'
import { createRateLimiter, type RateLimitOutcome } from '../../src/access/rate-limit/limiter.ts'
import type { Granted, SharedCounters } from '../../src/access/rate-limit/redis.ts'

const budget = { limit: 10, windowSeconds: 60 }

describe('GCRA', () => {
  test('a burst of more than the limit gets exactly the limit', () => {
    let tat = 0
    const allowed = Array.from({ length: 25 }, () => {
      const verdict = gcra(tat, 1_000, budget)
      tat = verdict.tat
      return verdict.allowed
    })
    expect(allowed.filter(Boolean)).toHaveLength(10)
    expect(allowed.slice(0, 10).every(Boolean)).toBe(true)
  })

  test('remaining counts down to 0 and a refusal says when to retry and when the budget is whole', () => {
    let tat = 0
    const remaining: number[] = []
    for (let i = 0; i < 10; i++) {
      const verdict = gcra(tat, 0, budget)
      tat = verdict.tat
      remaining.push(verdict.remaining)
    }
    expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    const refused = gcra(tat, 0, budget)
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 6, resetSeconds: 60 })
    // One emission interval (6 s) later exactly one more fits.
    expect(gcra(tat, 5_999, budget).allowed).toBe(false)
    expect(gcra(tat, 6_000, budget).allowed).toBe(true)
  })

  test('the full budget is back one window after the burst', () => {
    let tat = 0
    for (let i = 0; i < 10; i++) tat = gcra(tat, 0, budget).tat
    let later = tat
    const allowed = Array.from({ length: 12 }, () => {
      const verdict = gcra(later, 60_000, budget)
      later = verdict.tat
      return verdict.allowed
    })
    expect(allowed.filter(Boolean)).toHaveLength(10)
  })

  test('over a long run the accepted rate does not exceed limit / window by more than 1%', () => {
    // A client hammering every 100 ms for an hour: the first burst, then one per interval.
    let tat = 0
    let accepted = 0
    for (let t = 0; t < 3_600_000; t += 100) {
      const verdict = gcra(tat, t, budget)
      tat = verdict.tat
      if (verdict.allowed) accepted++
    }
    const steady = (10 / 60) * 3_600
    expect(accepted).toBeLessThanOrEqual(Math.floor(steady * 1.01) + 10)
    expect(accepted).toBeGreaterThanOrEqual(steady)
  })

  test('an accepted request says when the budget is whole again: the TAT it leaves, in whole seconds from now', () => {
    expect(gcra(0, 1_000_000, budget)).toMatchObject({ allowed: true, remaining: 9, resetSeconds: 6 })
    expect(gcra(1_000_000 + 30_000, 1_000_000, budget)).toMatchObject({ allowed: true, remaining: 4, resetSeconds: 36 })
    // Refused, at any clock: whole again one window on, the next request one interval on.
    expect(gcra(1_060_000, 1_000_000, budget)).toMatchObject({ allowed: false, resetSeconds: 60, retryAfterSeconds: 6 })
  })

  test('the last request of a window is accepted up to the slack (half a millisecond at most), and not beyond', () => {
    // Nine taken: the tenth leaves its TAT exactly one window ahead, or that plus the slack.
    expect(gcra(54_000, 0, budget).allowed).toBe(true)
    expect(gcra(54_000.5, 0, budget).allowed).toBe(true)
    expect(gcra(54_000.6, 0, budget).allowed).toBe(false)
    // A fast budget (10 ms an interval) is given a thousandth of its interval, not half a millisecond.
    const fast = { limit: 6000, windowSeconds: 60 }
    expect(gcra(59_990.01, 0, fast).allowed).toBe(true)
    expect(gcra(59_990.3, 0, fast).allowed).toBe(false)
  })

  test('standing tells what a budget stands at, taking nothing', () => {
    expect(standing(0, 1_000_000, budget)).toMatchObject({ allowed: true, tat: 0, remaining: 10, resetSeconds: 0 })
    // Nine taken at 0: one left, whole again in 54 s; the boundary as gcra draws it.
    expect(standing(54_000, 0, budget)).toMatchObject({ allowed: true, tat: 54_000, remaining: 1, resetSeconds: 54 })
    expect(standing(54_000.5, 0, budget).allowed).toBe(true)
    expect(standing(54_000.6, 0, budget).allowed).toBe(false)
    // All ten taken: nothing left, whole again in a window.
    expect(standing(60_000, 0, budget)).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 60 })
    for (const tat of [0, 30_000, 54_000, 60_000, 61_000]) expect(standing(tat, 0, budget).allowed).toBe(gcra(tat, 0, budget).allowed)
  })

  const rates = [
    { limit: 1, windowSeconds: 1 },
    { limit: 3, windowSeconds: 1 },
    { limit: 300, windowSeconds: 60 },
    { limit: 6000, windowSeconds: 60 },
    { limit: 1_000_000, windowSeconds: 86_400 },
    { limit: 7, windowSeconds: 86_400 },
  ]
  for (const rate of rates) {
    test(`${rate.limit}/${rate.windowSeconds}: a burst of limit + 5 gets exactly the limit`, async () => {
      const limiter = createRateLimiter()
      let allowed = 0
      for (let i = 0; i < rate.limit + 5; i++) {
        if ((await limiter.take('k', rate, 10)).allowed) allowed++
      }
      expect(allowed).toBe(rate.limit)
    })
  }
})

describe('the limiter in memory', () => {
  test('buckets are apart, and the number of buckets is bounded', async () => {
    const limiter = createRateLimiter({ maxBuckets: 3 })
    const take = (bucket: string) => limiter.take(bucket, { limit: 1, windowSeconds: 60 }, 0)
    expect((await take('a')).allowed).toBe(true)
    expect((await take('a')).allowed).toBe(false)
    expect((await take('b')).allowed).toBe(true)
    // Four more buckets push 'a' out: forgotten, it starts with a full budget (memory stays bounded).
    for (const bucket of ['c', 'd', 'e', 'f']) await take(bucket)
    expect((await take('a')).allowed).toBe(true)
  })

  test('each take answers an outcome of its own, which later takes never change', async () => {
    const limiter = createRateLimiter()
    const three = { limit: 3, windowSeconds: 60 }
    const take = (bucket: string, now: number) => limiter.take(bucket, three, now)
    const seen: RateLimitOutcome[] = []
    for (const [bucket, now] of [
      ['a', 0],
      ['b', 0],
      ['a', 0],
      ['b', 1],
      ['a', 2],
      ['a', 3],
    ] as const)
      seen.push(await take(bucket, now))
    expect(seen.map((o) => [o.allowed, o.remaining])).toEqual([
      [true, 2],
      [true, 2],
      [true, 1],
      [true, 1],
      [true, 0],
      [false, 0],
    ])
    expect(seen[5]!.retryAfterSeconds).toBe(20)
    expect(await take('b', 4)).toMatchObject({ allowed: true, remaining: 0 })
  })
})

describe('the limiter with shared counters', () => {
  /** Shared counters that answer each lease from a script: a grant, or null (Redis failed). */
  function scripted(answers: (Granted | null)[]): SharedCounters & { leases: number } {
    const counters = {
      leases: 0,
      available: () => true,
      lease: async () => {
        counters.leases++
        return answers.shift() ?? null
      },
      close: async () => {},
    }
    return counters
  }

  test('two takes waiting on one failing refill get one outcome each: the last unit goes to exactly one', async () => {
    // The first lease leaves the shared budget one request; the refill after it fails, so
    // both takes fall back to counting alone from what was left.
    const shared = scripted([{ tokens: 0, remaining: 1, waitMs: 0 }, null])
    const limiter = createRateLimiter({ shared })
    const two = { limit: 2, windowSeconds: 60 }
    expect((await limiter.take('bucket', two, 0)).allowed).toBe(true)
    // The first lease settles (a turn's end runs every microtask before it).
    await new Promise((resolve) => setImmediate(resolve))
    expect(shared.leases).toBe(1)
    const [first, second] = await Promise.all([limiter.take('bucket', two, 1), limiter.take('bucket', two, 1)])
    expect(first).not.toBe(second)
    expect([first!.allowed, second!.allowed].sort()).toEqual([false, true])
    expect(shared.leases).toBe(2)
  })
})

describe('failed-authentication budgets', () => {
  test('blocks an address once it drew the budget in failures, until the window has passed', () => {
    const failures = createFailureBudget({ limit: 3, windowSeconds: 60 })
    expect(failures.active(0)).toBe(false)
    for (let i = 0; i < 3; i++) {
      expect(failures.blocked('198.51.100.1', i)).toBeNull()
      failures.record('198.51.100.1', i)
    }
    expect(failures.active(3)).toBe(true)
    expect(failures.blocked('198.51.100.1', 3)).toBeGreaterThanOrEqual(1)
    expect(failures.blocked('198.51.100.2', 3)).toBeNull()
    expect(failures.blocked('198.51.100.1', 60_003)).toBeNull()
    expect(failures.active(60_003)).toBe(false)
  })
})

describe('client address (TRUST_PROXY, X-Forwarded-For)', () => {
  const behindProxies = createClientAddressRule(['10.0.0.0/8', '127.0.0.1', 'fd00::/8'])
  const cases: [string, string | undefined, string | null, string][] = [
    ['no proxy trusted: the peer, X-Forwarded-For ignored', undefined, '203.0.113.9', '198.51.100.1'],
    ['a trusted peer: the right-most entry', '10.1.1.1', '203.0.113.9', '203.0.113.9'],
    ['a trusted peer: trusted hops are skipped from the right', '10.1.1.1', '203.0.113.9, 10.2.2.2, 127.0.0.1', '203.0.113.9'],
    ['a trusted peer: a forged left entry does not count', '10.1.1.1', '1.2.3.4, 203.0.113.9', '203.0.113.9'],
    ['an untrusted peer: X-Forwarded-For ignored', '198.51.100.1', '203.0.113.9', '198.51.100.1'],
    ['a trusted peer without the header: the peer', '10.1.1.1', null, '10.1.1.1'],
    ['an entry that is not an address is the client as it stands, never the proxy', '10.1.1.1', 'not-an-ip', 'not-an-ip'],
    ['an address with a port is not an address: as it stands', '10.1.1.1', '203.0.113.7:443', '203.0.113.7:443'],
    ['a bracketed IPv6 address: as it stands', '10.1.1.1', '[2001:db8::1]', '[2001:db8::1]'],
    ['a zone id: as it stands', '10.1.1.1', 'fe80::1%eth0', 'fe80::1%eth0'],
    ['"unknown": as it stands, even behind trusted hops', '10.1.1.1', 'unknown, 10.2.2.2', 'unknown'],
    ['an empty entry: named, not the proxy', '10.1.1.1', '203.0.113.9, ', '(empty)'],
    ['IPv4 mapped in IPv6 is the IPv4 address', '::ffff:10.1.1.1', '203.0.113.9', '203.0.113.9'],
    ['an IPv6 proxy range', 'fd12::1', '2001:db8::7', '2001:db8::7'],
    ['a mapped IPv4 hop is the IPv4 address', '10.1.1.1', '::ffff:203.0.113.9', '203.0.113.9'],
    ['an IPv6 address that only starts like a mapped one stays IPv6', '10.1.1.1', '::ffff:1234', '::ffff:1234'],
    ['an IPv6 hop is written in lower case', '10.1.1.1', '2001:DB8::A', '2001:db8::a'],
    ['every hop trusted: the left-most trusted one', '10.1.1.1', '10.9.9.9', '10.9.9.9'],
  ]
  for (const [name, peer, forwarded, expected] of cases) {
    test(name, () => {
      const rule = peer === undefined ? createClientAddressRule([]) : behindProxies
      expect(rule(peer ?? '198.51.100.1', forwarded)).toBe(expected)
    })
  }

  test('bad TRUST_PROXY entries are refused, naming the entry', () => {
    for (const entry of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '::1/129', '']) {
      expect(() => parseTrustedProxies([entry])).toThrow(`"${entry}"`)
    }
  })

  test('IPv6 visitors are budgeted per /64', () => {
    expect(budgetSubject('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64')
    expect(budgetSubject('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64')
    expect(budgetSubject('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64')
    expect(budgetSubject('198.51.100.7')).toBe('198.51.100.7')
  })
})
