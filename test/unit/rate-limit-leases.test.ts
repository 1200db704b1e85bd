import { describe, expect, test } from 'bun:test'
import { createRateLimiter } from '../../src/access/rate-limit/limiter.ts'
import type { Granted, SharedCounters } from '../../src/access/rate-limit/redis.ts'

// The limiter over shared counters (REDIS_URL), with the counters scripted: what each
// instance leases, spends, refuses and says in its RateLimit-* headers, and how it goes on
// alone when Redis goes away. test/api/rate-limit-shared.test.ts runs two instances on a real Redis.

/** 100 requests a minute: one every 600 ms; a lease is a twentieth, 5 requests. */
const budget = { limit: 100, windowSeconds: 60 }

interface Lease {
  bucket: string
  want: number
  debt: number
}

/**
 * Shared counters answering each lease from `answers`, recording what was asked. A null is
 * Redis failing: as the real counters do, they then say they are unavailable.
 */
function scripted(answers: (Granted | null)[]) {
  const asked: Lease[] = []
  const counters: SharedCounters & { up: boolean; closed: number; asked: Lease[] } = {
    up: true,
    closed: 0,
    asked,
    available: () => counters.up,
    lease: async (bucket, _budget, want, debt) => {
      asked.push({ bucket, want, debt })
      const answer = answers.shift() ?? null
      if (answer === null) counters.up = false
      return answer
    },
    close: async () => {
      counters.closed++
    },
  }
  return counters
}

/** Lets a lease started in the background settle. */
const settled = () => new Promise((resolve) => setImmediate(resolve))

describe('the limiter with shared counters: leases', () => {
  test('the first request of a bucket goes through at once and is charged with the first lease of a twentieth', async () => {
    const shared = scripted([{ tokens: 5, remaining: 90, waitMs: 0 }])
    const limiter = createRateLimiter({ shared })
    const first = limiter.take('b', budget, 0)
    // Before the lease answers, the headers count the shared budget less the one accepted.
    expect(limiter.peek('b', budget, 0)).toEqual({ allowed: true, limit: 100, remaining: 99, resetSeconds: 1, retryAfterSeconds: 0 })
    expect(await first).toEqual({ allowed: true, limit: 100, remaining: 99, resetSeconds: 1, retryAfterSeconds: 0 })
    await settled()
    expect(shared.asked).toEqual([{ bucket: 'b', want: 5, debt: 1 }])
    // Then they count the lease (5) and the shared rest (90): 5 spent, 3 s to drain.
    expect(limiter.peek('b', budget, 0)).toEqual({ allowed: true, limit: 100, remaining: 95, resetSeconds: 3, retryAfterSeconds: 0 })
  })

  test('a small budget leases one request at a time', async () => {
    const shared = scripted([{ tokens: 1, remaining: 8, waitMs: 0 }])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', { limit: 10, windowSeconds: 60 }, 0)
    await settled()
    expect(shared.asked).toEqual([{ bucket: 'b', want: 1, debt: 1 }])
  })

  test('leased requests are spent without asking Redis; remaining counts the lease and the shared rest', async () => {
    const shared = scripted([{ tokens: 5, remaining: 90, waitMs: 0 }])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    // 5 leased + 90 shared; each spent request takes one. The reset is the time the spent
    // part needs to drain at one request per 600 ms, in whole seconds.
    const outcomes = []
    for (let i = 0; i < 5; i++) outcomes.push(await limiter.take('b', budget, 1))
    expect(outcomes.map((o) => [o.allowed, o.remaining, o.resetSeconds, o.retryAfterSeconds])).toEqual([
      [true, 94, 4, 0], // 6 × 600 ms = 3.6 s
      [true, 93, 5, 0],
      [true, 92, 5, 0], // 4.8 s
      [true, 91, 6, 0],
      [true, 90, 6, 0],
    ])
    expect(shared.asked).toHaveLength(1)
    expect(limiter.peek('b', budget, 1)).toEqual({ allowed: true, limit: 100, remaining: 90, resetSeconds: 6, retryAfterSeconds: 0 })
  })

  test('a spent lease is refilled with the next request, which then spends from it', async () => {
    const shared = scripted([
      { tokens: 1, remaining: 90, waitMs: 0 },
      { tokens: 5, remaining: 80, waitMs: 0 },
    ])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    expect((await limiter.take('b', budget, 1)).remaining).toBe(90)
    expect(shared.asked).toHaveLength(1)
    expect(await limiter.take('b', budget, 2)).toMatchObject({ allowed: true, remaining: 84 })
    expect(shared.asked).toEqual([
      { bucket: 'b', want: 5, debt: 1 },
      { bucket: 'b', want: 5, debt: 0 },
    ])
  })

  test('an empty lease refuses until the time Redis gave, without asking again; at that time it asks', async () => {
    const shared = scripted([
      { tokens: 0, remaining: 0, waitMs: 2500 },
      { tokens: 1, remaining: 0, waitMs: 0 },
    ])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    // The first lease was empty: blocked until 2,500 ms, as Redis said.
    expect(await limiter.take('b', budget, 0)).toEqual({ allowed: false, limit: 100, remaining: 0, resetSeconds: 60, retryAfterSeconds: 3 })
    expect(await limiter.take('b', budget, 1000)).toEqual({
      allowed: false,
      limit: 100,
      remaining: 0,
      resetSeconds: 60,
      retryAfterSeconds: 2,
    })
    expect(await limiter.take('b', budget, 2499)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    expect(shared.asked).toHaveLength(1)
    expect(limiter.peek('b', budget, 2499)).toEqual({ allowed: false, limit: 100, remaining: 0, resetSeconds: 60, retryAfterSeconds: 0 })
    expect(await limiter.take('b', budget, 2500)).toMatchObject({ allowed: true, remaining: 0 })
    expect(shared.asked).toHaveLength(2)
  })

  test('a refill that comes back empty refuses the request that asked, for the wait Redis gave from then', async () => {
    const shared = scripted([
      { tokens: 0, remaining: 3, waitMs: 0 },
      { tokens: 0, remaining: 0, waitMs: 1200 },
    ])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    expect(await limiter.take('b', budget, 5000)).toEqual({
      allowed: false,
      limit: 100,
      remaining: 0,
      resetSeconds: 60,
      retryAfterSeconds: 2,
    })
    expect(await limiter.take('b', budget, 6000)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    expect(shared.asked).toHaveLength(2)
  })

  test('requests accepted before a failed lease are charged with the next one', async () => {
    const shared = scripted([null, { tokens: 5, remaining: 90, waitMs: 0 }])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    shared.up = true // Redis back before this instance gave up the lease it started
    expect(await limiter.take('b', budget, 1)).toMatchObject({ allowed: true, remaining: 94 })
    expect(shared.asked).toEqual([
      { bucket: 'b', want: 5, debt: 1 },
      { bucket: 'b', want: 5, debt: 1 },
    ])
  })

  test('buckets lease apart', async () => {
    const shared = scripted([
      { tokens: 5, remaining: 90, waitMs: 0 },
      { tokens: 5, remaining: 90, waitMs: 0 },
    ])
    const limiter = createRateLimiter({ shared })
    await limiter.take('a', budget, 0)
    await limiter.take('b', budget, 0)
    await settled()
    expect(shared.asked.map((lease) => lease.bucket)).toEqual(['a', 'b'])
  })
})

describe('the limiter with shared counters: Redis going away', () => {
  test('it goes on alone from what it knew was left: its unspent lease and the shared rest', async () => {
    const shared = scripted([{ tokens: 5, remaining: 10, waitMs: 0 }])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    await limiter.take('b', budget, 0)
    await limiter.take('b', budget, 0) // 3 leased left, 10 shared
    shared.up = false
    expect(limiter.sharing()).toBe(false)
    expect(await limiter.take('b', budget, 0)).toMatchObject({ allowed: true, remaining: 12 })
    expect(limiter.peek('b', budget, 0)).toMatchObject({ allowed: true, remaining: 12 })
    for (let i = 0; i < 12; i++) expect((await limiter.take('b', budget, 0)).allowed).toBe(true)
    expect((await limiter.take('b', budget, 0)).allowed).toBe(false)
    expect(shared.asked).toHaveLength(1)
  })

  test('counting alone keeps what it counted alone before: a lease does not give back a spent budget', async () => {
    const shared = scripted([{ tokens: 5, remaining: 90, waitMs: 0 }])
    const limiter = createRateLimiter({ shared })
    // Alone from the start: the whole budget spent here.
    shared.up = false
    for (let i = 0; i < 100; i++) await limiter.take('b', budget, 0)
    expect((await limiter.take('b', budget, 0)).allowed).toBe(false)
    // Redis back: a lease; Redis gone again: the lease said 95 were left, but this
    // instance had spent all of them alone, and the stricter of the two holds.
    shared.up = true
    await limiter.take('b', budget, 0)
    await settled()
    shared.up = false
    expect(await limiter.take('b', budget, 0)).toMatchObject({ allowed: false, remaining: 0 })
  })

  test('a refill that fails goes on alone from the lease', async () => {
    const shared = scripted([{ tokens: 0, remaining: 2, waitMs: 0 }, null])
    const limiter = createRateLimiter({ shared })
    await limiter.take('b', budget, 0)
    await settled()
    expect(await limiter.take('b', budget, 0)).toMatchObject({ allowed: true, remaining: 1 })
    expect(await limiter.take('b', budget, 0)).toMatchObject({ allowed: true, remaining: 0 })
    expect((await limiter.take('b', budget, 0)).allowed).toBe(false)
  })

  test('sharing() says whether Redis counts; close() closes the counters', async () => {
    const shared = scripted([])
    const limiter = createRateLimiter({ shared })
    expect(limiter.sharing()).toBe(true)
    shared.up = false
    expect(limiter.sharing()).toBe(false)
    await limiter.close()
    expect(shared.closed).toBe(1)
    const alone = createRateLimiter()
    expect(alone.sharing()).toBe(false)
    await alone.close()
  })
})
