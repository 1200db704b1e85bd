import { afterEach, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { createSharedCounters, type SharedCounters } from '../../src/access/rate-limit/redis.ts'
import { freePort, redisServerMissing, startRedis, type TestRedis } from '../support/redis-server.ts'
import { waitUntil } from '../support/wait.ts'

// The shared counters themselves (REDIS_URL) against a redis-server of the test's own: the
// leases Redis grants by GCRA on its own clock, the keys it keeps, and what the counters
// say and log when Redis goes away, hangs and comes back.

const redisMissing = redisServerMissing('shared counter tests')

/** 10 requests a minute: one every 6 s. */
const budget = { limit: 10, windowSeconds: 60 }

describe.if(!redisMissing)('shared counters on Redis', () => {
  const opened: SharedCounters[] = []
  const servers: TestRedis[] = []
  afterEach(async () => {
    for (const counters of opened.splice(0)) await counters.close()
    for (const redis of servers.splice(0)) await redis.stop()
  })

  async function server(port?: number) {
    const redis = await startRedis(port)
    servers.push(redis)
    return redis
  }

  function open(url: string) {
    const lines: string[] = []
    const counters = createSharedCounters(url, (line) => void lines.push(line))
    opened.push(counters)
    return { counters, lines }
  }

  async function ready() {
    const redis = await server()
    const { counters, lines } = open(redis.url)
    await waitUntil(() => counters.available(), 'the counters to reach Redis')
    return { redis, counters, lines }
  }

  test('a lease charges the debt, grants up to what is asked, and says what is left', async () => {
    const { counters, lines } = await ready()
    // Debt 1 and 2 wanted: 3 of 10 taken, 7 left.
    expect(await counters.lease('a', budget, 2, 1)).toEqual({ tokens: 2, remaining: 7, waitMs: 0 })
    // More than is left: what is left.
    expect(await counters.lease('a', budget, 20, 0)).toEqual({ tokens: 7, remaining: 0, waitMs: 0 })
    // None left: an empty grant, and the wait until one request fits (one interval, less
    // the few milliseconds since the budget was taken).
    const empty = await counters.lease('a', budget, 1, 0)
    expect(empty).toMatchObject({ tokens: 0, remaining: 0 })
    expect(empty!.waitMs).toBeGreaterThan(5_000)
    expect(empty!.waitMs).toBeLessThanOrEqual(6_000)
    // Another bucket has its own budget.
    expect(await counters.lease('b', budget, 10, 0)).toEqual({ tokens: 10, remaining: 0, waitMs: 0 })
    expect(lines).toEqual([])
  })

  test("each bucket is one key under keygate:rl:, kept no longer than its budget's window takes to refill", async () => {
    const { redis, counters } = await ready()
    await counters.lease('key:k1', budget, 4, 0)
    const client = new RedisClient(redis.url)
    try {
      expect(await client.send('KEYS', ['*'])).toEqual(['keygate:rl:key:k1'])
      // 4 of 10 taken: 24 s to drain, plus a second.
      const ttl = Number(await client.send('PTTL', ['keygate:rl:key:k1']))
      expect(ttl).toBeGreaterThan(24_000)
      expect(ttl).toBeLessThanOrEqual(25_000)
    } finally {
      client.close()
    }
  })

  test('Redis stopped: the counters say so, a lease answers null, the loss is logged once without the URL; back, it is logged', async () => {
    const { redis, counters, lines } = await ready()
    await redis.stop()
    await waitUntil(() => !counters.available(), 'the counters to notice the loss', 3_000)
    expect(await counters.lease('a', budget, 1, 0)).toBeNull()
    expect(await counters.lease('a', budget, 1, 0)).toBeNull()
    expect(lines).toHaveLength(1)
    expect(lines[0]).toStartWith('rate-limit counters: Redis unreachable (')
    expect(lines[0]).toEndWith('); each instance counts alone until it is back')
    expect(lines[0]).not.toContain(String(redis.port))

    await server(redis.port)
    await waitUntil(() => counters.available(), 'the counters to reach Redis again', 5_000)
    expect(lines).toEqual([lines[0]!, 'rate-limit counters: Redis is back; instances share budgets again'])
    expect(await counters.lease('a', budget, 1, 0)).toEqual({ tokens: 1, remaining: 9, waitMs: 0 })
  })

  test('Redis hung: a lease gives up within its deadline, and an idle instance finds the loss by its heartbeat', async () => {
    const { redis, counters, lines } = await ready()
    redis.pause()
    try {
      // Answered by its own deadline (250 ms), not by Redis.
      expect(await counters.lease('a', budget, 1, 0)).toBeNull()
      expect(counters.available()).toBe(false)
      expect(lines).toHaveLength(1)
    } finally {
      redis.resume()
    }
    await waitUntil(() => counters.available(), 'the counters to find Redis answering again', 5_000)

    // Idle from here: no lease asks, the heartbeat notices.
    redis.pause()
    try {
      await waitUntil(() => !counters.available(), 'the heartbeat to notice the hang', 3_000)
      expect(lines.filter((line) => line.includes('Redis unreachable'))).toHaveLength(2)
    } finally {
      redis.resume()
    }
  })

  test('unreachable from the start: logged once; it connects when Redis comes up', async () => {
    const port = await freePort()
    const { counters, lines } = open(`redis://127.0.0.1:${port}`)
    await waitUntil(() => lines.length === 1, 'the first connection to fail', 5_000)
    expect(counters.available()).toBe(false)
    expect(lines[0]).toContain('Redis unreachable')
    await server(port)
    await waitUntil(() => counters.available(), 'the counters to connect', 5_000)
    expect(lines[1]).toBe('rate-limit counters: Redis is back; instances share budgets again')
  })

  test('closed counters say nothing when Redis goes away after', async () => {
    const { redis, counters, lines } = await ready()
    await counters.close()
    await redis.stop()
    await Bun.sleep(1_500) // past a heartbeat and a probe
    expect(lines).toEqual([])
  })
})
