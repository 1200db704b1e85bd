import { afterEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createClient, type DeliveryFailure, type DeliveryStats, type KeygateClient } from '../../clients/node/src/index.ts'
import { killStartedProcesses } from '../support/process.ts'
import { startTcpProxy } from '../support/tcp-proxy.ts'
import { ENGINE, listeningService, privateKey, recordingFetch, serviceProcess, type Stored, storedEvents } from './support.ts'

// The backend client against the real service: whatever happens between the client and
// the service (a restart, a spent budget, the client's own process told to stop), every
// tracked event is stored, and stored once (docs/api.md, "Events: ids and exactly-once").

afterEach(killStartedProcesses)

const EVENTS = 10_000
// Restarts of a busy machine's service process, not the client, set this bound.
const TIMEOUT = 120_000

function counts(sent: string[], stored: Stored) {
  const missing = sent.filter((id) => !stored.ids.has(id)).length
  return { sent: sent.length, stored: stored.rows, distinct: stored.distinctIds, storedTwice: stored.storedTwice, missing }
}

describe(`every tracked event is stored once (${ENGINE})`, () => {
  test(
    '10,000 events streamed through a service restart (SIGTERM, started again on the same database)',
    async () => {
      const service = await serviceProcess()
      const { businessId, key } = await service.privateKey({ limit: 1_000_000, windowSeconds: 1 })
      const { fetch, statuses } = recordingFetch()
      const failures: DeliveryFailure[] = []
      const client = createClient({ key, baseUrl: service.base, fetch, onError: (failure) => failures.push(failure) })

      const sent: string[] = []
      let restarted: Promise<void> | undefined
      for (let i = 0; i < EVENTS; i++) {
        sent.push(client.track({ eventType: 'order_paid', properties: { i } }))
        if (i % 100 === 99) await Bun.sleep(2)
        if (i === 2_999) restarted = service.restart()
      }
      await restarted
      await client.flush()
      await service.stop()

      const result = counts(sent, await storedEvents(businessId, service.dataDir))
      console.log(`  restart: ${JSON.stringify(result)}, ${statuses.filter((s) => s === 0).length} requests met no service`)
      expect(result).toEqual({ sent: EVENTS, stored: EVENTS, distinct: EVENTS, storedTwice: 0, missing: 0 })
      expect(failures).toEqual([])
      expect(client.stats()).toEqual({ queued: 0, committed: EVENTS, dropped: 0 })
      // It did go through the restart: some requests found no service.
      expect(statuses).toContain(0)
    },
    TIMEOUT,
  )

  test(
    '10,000 events in one burst past the key’s rate limit: every 429 retried after its Retry-After',
    async () => {
      // The limiter's clock moves only when the client is refused, by the budget's window:
      // the budget is whole again each time the client waits out a Retry-After, so the
      // refusals are the same on any machine: 20 requests accepted, then one 429, and again.
      let limiterNow = 0
      const { service, base, stop } = await listeningService({ limitClock: () => limiterNow })
      const { businessId, key } = await privateKey(service, { limit: 20, windowSeconds: 1 })
      const retryAfters: (string | null)[] = []
      const { fetch, statuses } = recordingFetch((response) => {
        if (response.status !== 429) return
        retryAfters.push(response.headers.get('retry-after'))
        limiterNow += 1000
      })
      const failures: DeliveryFailure[] = []
      const client = createClient({ key, baseUrl: base, fetch, onError: (failure) => failures.push(failure) })

      const sent = Array.from({ length: EVENTS }, (_, i) => client.track({ eventType: 'order_paid', properties: { i } }))
      await client.flush()
      await stop()

      const result = counts(sent, await storedEvents(businessId))
      console.log(`  rate limit: ${JSON.stringify(result)}, ${statuses.filter((s) => s === 429).length} answers 429`)
      expect(result).toEqual({ sent: EVENTS, stored: EVENTS, distinct: EVENTS, storedTwice: 0, missing: 0 })
      expect(failures).toEqual([])
      // 100 batches of 100: 20 accepted a window, so 4 refusals, each with Retry-After.
      expect({ accepted: statuses.filter((s) => s === 202).length, refused: statuses.filter((s) => s === 429).length }).toEqual({
        accepted: 100,
        refused: 4,
      })
      expect(statuses).toHaveLength(104)
      expect(retryAfters).toEqual(['1', '1', '1', '1'])
    },
    TIMEOUT,
  )

  test(
    'a process that calls shutdown() on SIGTERM loses nothing it tracked',
    async () => {
      const { service, base, stop } = await listeningService()
      const { businessId, key } = await privateKey(service)
      const child = Bun.spawn([process.execPath, join(import.meta.dir, 'sigterm-child.ts')], {
        env: { PATH: process.env.PATH ?? '', KEYGATE_URL: base, KEYGATE_KEY: key, EVENTS: '1250' },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const lines: string[] = []
      const reading = (async () => {
        const decoder = new TextDecoder()
        let text = ''
        for await (const chunk of child.stdout) {
          text += decoder.decode(chunk)
          lines.push(...text.split('\n').slice(0, -1))
          text = text.slice(text.lastIndexOf('\n') + 1)
        }
      })()
      while (!lines.includes('tracked')) {
        if (child.exitCode !== null) throw new Error(`the child exited ${child.exitCode}: ${await new Response(child.stderr).text()}`)
        await Bun.sleep(10)
      }
      child.kill('SIGTERM')
      expect(await child.exited).toBe(0)
      await reading
      await stop()

      const report = JSON.parse(lines.at(-1)!)
      expect(report.queuedAtSignal).toBeGreaterThanOrEqual(250)
      expect(report).toMatchObject({ queued: 0, committed: 1250, dropped: 0 })
      const stored = await storedEvents(businessId)
      expect({ stored: stored.rows, distinct: stored.distinctIds }).toEqual({ stored: 1250, distinct: 1250 })
    },
    TIMEOUT,
  )
})

// A deploy or a failover takes the service away for a few seconds, and the worker is told
// to stop (or flushes) while it is away: what the client holds must reach the service once
// it is back, within the time shutdown() or flush() was given (clients/node/README.md,
// "track()"). The service sits behind a TCP proxy the test takes down and brings back.
describe(`an outage met by shutdown(t) or flush(t) (${ENGINE})`, () => {
  /**
   * Jitter draws for the client's backoff: with these, the retry before the service is back
   * lands about 7.25 s in and the backoff's next one 8 s later, past a deadline 15 s in (the
   * run shown before the deadline's schedule). Any draws must do; these make the old
   * schedule's loss reproducible.
   */
  const DRAWS = [0.5, 0.75, 0.5, 0.9999]

  /**
   * Tracks `events` at 1,000 a second (50 every 50 ms, by the wall clock) through the proxy,
   * which goes down after `downAt` events and up `downFor` ms later, then calls `stop`.
   */
  async function throughOutage(
    { events, downAt, downFor }: { events: number; downAt: number; downFor: number },
    stop: (client: KeygateClient) => Promise<DeliveryStats>,
  ) {
    const { service, base, stop: stopService } = await listeningService()
    const { businessId, key } = await privateKey(service)
    const proxy = startTcpProxy({ hostname: '127.0.0.1', port: Number(new URL(base).port) })
    try {
      const { fetch, statuses } = recordingFetch()
      const failures: DeliveryFailure[] = []
      let draw = 0
      const client = createClient({
        key,
        baseUrl: `http://127.0.0.1:${proxy.port}`,
        fetch,
        onError: (failure) => failures.push(failure),
        random: () => DRAWS[draw++] ?? Math.random(),
      })
      let down = false
      let back: Promise<void> = Promise.resolve()
      const started = performance.now()
      const sent: string[] = []
      for (let i = 0; i < events; i++) {
        if (i % 50 === 0) await Bun.sleep(Math.max(0, started + i - performance.now()))
        if (i === downAt) {
          down = true
          proxy.set('down')
          back = Bun.sleep(downFor).then(() => {
            proxy.set('pass')
            down = false
          })
        }
        sent.push(client.track({ eventType: 'order_paid', properties: { i } }))
      }
      await Bun.sleep(Math.max(0, started + events - performance.now()))
      const downWhenCalled = down
      const stats = await stop(client)
      await back
      const stored = counts(sent, await storedEvents(businessId))
      const dropped = failures.reduce((sum, failure) => sum + failure.events.length, 0)
      return { downWhenCalled, stats, stored, dropped, failures, unanswered: statuses.filter((s) => s === 0).length }
    } finally {
      proxy.stop()
      await stopService()
    }
  }

  test(
    '5,000 events at 1,000/s, the service away from 1.5 s to 7.5 s, shutdown(10_000) at 5 s: all stored, once, none dropped',
    async () => {
      const run = await throughOutage({ events: 5000, downAt: 1500, downFor: 6000 }, (client) => client.shutdown(10_000))
      console.log(
        `  shutdown in an outage: ${JSON.stringify({ ...run.stored, dropped: run.dropped })}, ${run.unanswered} requests met no service`,
      )
      expect(run.downWhenCalled).toBe(true)
      expect(run.stored).toEqual({ sent: 5000, stored: 5000, distinct: 5000, storedTwice: 0, missing: 0 })
      expect(run.failures).toEqual([])
      expect(run.stats).toEqual({ queued: 0, committed: 5000, dropped: 0 })
    },
    TIMEOUT,
  )

  test(
    '3,000 events at 1,000/s, the service away from 1 s to 7 s, flush(10_000) at 3 s: it resolves with all stored, once',
    async () => {
      const run = await throughOutage({ events: 3000, downAt: 1000, downFor: 6000 }, (client) => client.flush(10_000))
      console.log(
        `  flush in an outage: ${JSON.stringify({ ...run.stored, dropped: run.dropped })}, ${run.unanswered} requests met no service`,
      )
      expect(run.downWhenCalled).toBe(true)
      expect(run.stats).toEqual({ queued: 0, committed: 3000, dropped: 0 })
      expect(run.stored).toEqual({ sent: 3000, stored: 3000, distinct: 3000, storedTwice: 0, missing: 0 })
      expect(run.failures).toEqual([])
    },
    TIMEOUT,
  )
})
