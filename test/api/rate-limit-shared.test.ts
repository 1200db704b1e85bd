import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { redisServerMissing, startRedis } from '../support/redis-server.ts'
import { waitUntil } from '../support/wait.ts'
import { call, seedBusiness, seedKey, testService } from '../support/service.ts'
import type { Service } from '../../src/app.ts'
import { createLogger } from '../../src/observability/log.ts'

const redisMissing = redisServerMissing('shared rate-limit tests')

// Two instances over one database, sharing budgets through a Redis the test owns and stops.
describe.if(!redisMissing)('several instances with REDIS_URL', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>
  let instances: Service[] = []
  const lines: string[] = []

  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.services.limiter.close()))
    await redis.stop()
  })

  async function twoInstances() {
    instances = await Promise.all(
      [1, 2].map(() =>
        testService({
          redisUrl: redis.url,
          logger: createLogger({ write: (line) => void lines.push(line) }),
        }),
      ),
    )
    await waitUntil(() => instances.every((instance) => instance.services.limiter.sharing()), 'both instances to reach Redis')
    return instances
  }

  const whoami = (instance: Service, key: string) => call(instance, '/api/v0/whoami', { key })

  test('share one budget: accepted across both stay within limit + 10% + one per instance; then Redis goes away', async () => {
    const [a, b] = await twoInstances()
    const businessId = await seedBusiness(a!)
    const limit = 40
    const { key } = await seedKey(a!, businessId, { type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: { limit, windowSeconds: 60 } })
    // 120 requests, alternating instances, in concurrent waves of 8.
    let accepted = 0
    let refused = 0
    for (let wave = 0; wave < 15; wave++) {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => whoami(i % 2 ? a! : b!, key)))
      for (const answer of answers) {
        if (answer.status === 200) accepted++
        else if (answer.status === 429) refused++
        else throw new Error(`unexpected ${answer.status}: ${await answer.text()}`)
      }
    }
    console.log(`shared budget of ${limit}: ${accepted} accepted, ${refused} refused across two instances`)
    expect(accepted).toBeLessThanOrEqual(Math.floor(limit * 1.1) + 2)
    // Leases that one instance holds unspent are lost to the other: at most a slice each.
    expect(accepted).toBeGreaterThanOrEqual(limit - 2 * Math.max(1, Math.floor(limit / 20)))

    // Redis goes away: both instances keep serving, counting alone, and say so once.
    await redis.stop()
    const fresh = await seedKey(a!, businessId, { type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: { limit: 3, windowSeconds: 60 } })
    const afterLoss = []
    for (let i = 0; i < 4; i++) afterLoss.push((await whoami(a!, fresh.key)).status, (await whoami(b!, fresh.key)).status)
    expect(afterLoss.filter((status) => status >= 500)).toEqual([])
    // Each instance counts alone (3 each), plus the one request each let through before it
    // noticed the loss (the "one per instance" of the contract's tolerance).
    const served = afterLoss.filter((status) => status === 200).length
    expect(served).toBeGreaterThanOrEqual(6)
    expect(served).toBeLessThanOrEqual(8)
    expect(instances.every((instance) => !instance.services.limiter.sharing())).toBe(true)
    const lost = lines.filter((line) => line.includes('Redis unreachable'))
    expect(lost).toHaveLength(2) // once per instance, not once per request
    expect(lost.join('\n')).not.toContain(redis.url)
  })
})

// Losing Redis never refuses traffic, and never hands out a budget
// twice. An instance holding a lease goes on alone from what it knew was left; every
// instance, busy or idle, logs the loss at once.
describe.if(!redisMissing)('losing Redis mid-budget', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>
  let instances: Service[] = []

  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.services.limiter.close()))
    await redis.stop()
  })

  test('the instance holding a lease grants no more than the budget in all; both instances log the loss', async () => {
    const logs: string[][] = [[], []]
    instances = await Promise.all(
      logs.map((lines) => testService({ redisUrl: redis.url, logger: createLogger({ write: (line) => void lines.push(line) }) })),
    )
    await waitUntil(() => instances.every((instance) => instance.services.limiter.sharing()), 'both instances to reach Redis')
    const [a] = instances
    const businessId = await seedBusiness(a!)
    const limit = 5
    const { key } = await seedKey(a!, businessId, { type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: { limit, windowSeconds: 60 } })
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await call(a!, '/api/v0/whoami', { key })).status)
    expect(statuses).toEqual([200, 200, 200])

    await redis.stop()
    // Well past the budget: only what was left may pass, and nothing fails.
    for (let i = 0; i < 6; i++) statuses.push((await call(a!, '/api/v0/whoami', { key })).status)
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([])
    expect(statuses.filter((status) => status === 200)).toHaveLength(limit)

    // The second instance took no request since: its heartbeat finds the loss (a generous wait).
    await waitUntil(
      () => logs.every((lines) => lines.some((line) => line.includes('Redis unreachable'))),
      'both instances to log the loss',
      3_000,
    )
    for (const lines of logs) expect(lines.filter((line) => line.includes('Redis unreachable'))).toHaveLength(1)
  })
})
