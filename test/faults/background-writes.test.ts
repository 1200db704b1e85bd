import { afterEach, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { openDatabase, type Database } from '../../db/client.ts'
import { createApp, type Service } from '../../src/app.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { createLogger } from '../../src/observability/log.ts'
import { ADMIN_TOKEN, seedBusiness, seedKey, testService } from '../support/service.ts'
import { testDatabaseUrl } from '../support/database.ts'

// Background records never decide availability. Another session
// holds the usage tables locked (as a long vacuum, a migration or a slow disk would) for
// longer than the background statement timeout: the usage flush times out, and nothing
// else notices. PGlite has a single connection and no second session to hold a lock, so
// this runs in the PostgreSQL pass only.
const databaseUrl = await testDatabaseUrl()

const opened: { service: Service; database: Database }[] = []
const lockers: postgres.Sql[] = []

afterEach(async () => {
  for (const locker of lockers.splice(0)) await locker.end({ timeout: 1 })
  for (const { service, database } of opened.splice(0)) {
    await service.app.stop(true)
    await service.drain()
    await database.close()
  }
})

describe.if(Boolean(databaseUrl))('background writes on a locked table (PostgreSQL)', () => {
  test('a usage flush that times out: /readyz stays 200, another business gets 202, nothing logs "database unavailable"; the counts arrive once the lock is gone', async () => {
    const owner = await testService()
    const counted = await seedKey(owner, await seedBusiness(owner, 'Counted'), { type: 'private', scopes: ['ANALYTICS_READ'] })
    const other = await seedKey(owner, await seedBusiness(owner, 'Other'), { type: 'private', scopes: ['ANALYTICS_WRITE'] })

    const database = await openDatabase({ databaseUrl, dataDir: 'memory://', backgroundTimeoutMs: 500 })
    const lines: string[] = []
    const service = createApp({
      database,
      adminToken: ADMIN_TOKEN,
      logger: createLogger({ write: (line) => lines.push(line) }),
      // Flushed by the test only; the first retry is due at once.
      usage: { flushIntervalMs: 3_600_000, retry: { retryDelayMs: 0 } },
    })
    opened.push({ service, database })
    service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
    const base = `http://127.0.0.1:${service.app.server!.port}`
    const get = (path: string, key?: string) => fetch(base + path, { headers: key ? { authorization: `Bearer ${key}` } : {} })
    const postEvent = (i: number) =>
      fetch(`${base}/api/v0/analytics`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ eventType: 'signup', anonymousId: `visitor-${i}` }),
      })

    for (let i = 0; i < 5; i++) expect((await get('/api/v0/whoami', counted.key)).status).toBe(200)

    const locker = postgres(databaseUrl!, { max: 1, onnotice: () => {} })
    lockers.push(locker)
    const session = await locker.reserve()
    await session`begin`
    await session`lock table key_usage_minutes in access exclusive mode`

    let settled = false
    const flushed = service.services.usage.flush().finally(() => (settled = true))
    const answers: number[] = []
    const ready: number[] = []
    let sent = 0
    // While the flush waits on the lock, and after it gave up: the other business is served.
    do {
      const [event, readiness] = await Promise.all([postEvent(sent++), get('/readyz')])
      answers.push(event.status)
      ready.push(readiness.status)
    } while (!settled)
    await flushed
    for (let i = 0; i < 5; i++) answers.push((await postEvent(sent++)).status)
    ready.push((await get('/readyz')).status)

    expect(service.services.usage.stats.writes).toMatchObject({ written: 0, failures: 1, dropped: 0 })
    expect(service.services.usage.stats.writes.waiting).toBeGreaterThan(0)
    expect(answers).toEqual(answers.map(() => 202))
    expect(ready).toEqual(ready.map(() => 200))
    expect(database.availability.up).toBe(true)

    await session`rollback`
    session.release()
    await service.services.usage.flush()
    expect(service.services.usage.stats.writes).toMatchObject({ failures: 1, dropped: 0, waiting: 0 })
    const usage = (await (
      await fetch(`${base}/admin/v0/keys/${counted.record.id}/usage`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as { series: { accepted: number }[] }
    expect(usage.series.reduce((sum, point) => sum + point.accepted, 0)).toBe(5)
    expect(lines.filter((line) => line.includes('database unavailable'))).toEqual([])
    console.log(`  the other business: ${answers.length} events, all 202, while the flush waited on the lock and after`)
  })
})
