import { afterEach, describe, expect, spyOn, test } from 'bun:test'
import { Delivery } from '../src/delivery.ts'
import type { Result } from '../src/http.ts'
import { createClient } from '../src/index.ts'
import { accepted, eventsOf, FakeClock, KEY, refusal, type SeenRequest, scriptedFetch, settle, trackingClient } from './fakes.ts'

// track()'s edges, on a clock the test moves: what its options accept, the words of its
// refusals and reports, where a batch is cut by size, which refusals drop one event, and
// the timers it leaves behind (each one would keep a process alive after shutdown).

const setup = trackingClient

const down = () => new TypeError('connection refused')
/** shutdown(0) on the fake clock: its deadline's timer fires when the clock moves. */
async function stop(client: ReturnType<typeof setup>['client'], clock: FakeClock) {
  const stopping = client.shutdown(0)
  await clock.advance(0)
  return stopping
}
const make = (options: Record<string, unknown>) => () => setup(accepted, options)

describe('the options', () => {
  test('each bound is checked, naming the option and the value', () => {
    expect(make({ batchSize: 0 })).toThrow(
      new RangeError('batchSize must be an integer from 1 to 500 (a request takes at most 500 events), not 0'),
    )
    expect(make({ batchSize: 1.5 })).toThrow(RangeError)
    expect(make({ maxQueueSize: 0 })).toThrow(new RangeError('maxQueueSize must be a positive integer, not 0'))
    expect(make({ maxQueueSize: 2.5 })).toThrow(new RangeError('maxQueueSize must be a positive integer, not 2.5'))
    expect(make({ flushInterval: -1 })).toThrow(new RangeError('flushInterval must be 0 or more milliseconds, not -1'))
    expect(make({ flushInterval: Number.NaN })).toThrow(new RangeError('flushInterval must be 0 or more milliseconds, not NaN'))
    const delays = new RangeError('minRetryDelay must be above 0 and maxRetryDelay at least minRetryDelay')
    expect(make({ minRetryDelay: 0 })).toThrow(delays)
    expect(make({ minRetryDelay: 2000, maxRetryDelay: 1999 })).toThrow(delays)
    expect(make({ minRetryDelay: Number.NaN })).toThrow(delays)
  })

  test('the smallest values each bound allows are taken', async () => {
    for (const options of [{ batchSize: 1 }, { maxQueueSize: 1 }, { flushInterval: 0 }, { minRetryDelay: 1, maxRetryDelay: 1 }]) {
      const { clock, requests, client } = setup(accepted, options)
      client.track({ eventType: 'a' })
      await clock.advance(1000)
      expect(requests).toHaveLength(1)
      expect(await stop(client, clock)).toEqual({ queued: 0, committed: 1, dropped: 0 })
    }
  })

  test('shutdown(0) gives up at once on what is held, and says so', async () => {
    const { clock, client, failures } = setup(() => 'hang', { flushInterval: 60_000 })
    client.track({ eventType: 'a' })
    const stopping = client.shutdown(0)
    await clock.advance(0)
    expect(await stopping).toEqual({ queued: 0, committed: 0, dropped: 1 })
    expect(failures.map((f) => [f.reason, f.events.map((e) => e.eventType)])).toEqual([['shutdown', ['a']]])
  })
})

describe('the default report', () => {
  const lines: string[] = []
  afterEach(() => void lines.splice(0))

  test('one console.error line a report: how many, why, and the service error when there is one', async () => {
    const spy = spyOn(console, 'error').mockImplementation((line: string) => void lines.push(line))
    try {
      const clock = new FakeClock()
      const { fetch } = scriptedFetch(clock, () => refusal(403, 'insufficient_scope', 'This key lacks ANALYTICS_WRITE.'))
      const client = createClient({ key: KEY, baseUrl: 'http://keygate.test', fetch, clock, maxQueueSize: 2 })
      client.track({ eventType: 'a' })
      client.track({ eventType: 'b' })
      client.track({ eventType: 'c' }) // the queue holds 2: 'a' is dropped
      await clock.advance(1000)
      expect(lines).toEqual([
        'keygate: 1 event(s) dropped, queue_full',
        'keygate: 2 event(s) dropped, refused: insufficient_scope (403) This key lacks ANALYTICS_WRITE.',
      ])
    } finally {
      spy.mockRestore()
    }
  })
})

describe('the queue bound when everything held is in flight', () => {
  test('a new event is dropped, not queued past the bound', async () => {
    const { clock, requests, client, failures } = setup(() => 'hang', { batchSize: 2, maxQueueSize: 2, timeoutMs: 60_000 })
    client.track({ eventType: 'a' })
    client.track({ eventType: 'b' })
    await settle()
    expect(requests).toHaveLength(1)
    const id = client.track({ eventType: 'c' })
    await settle()
    expect(client.stats()).toEqual({ queued: 2, committed: 0, dropped: 1 })
    expect(failures.map((f) => [f.reason, f.events.map((e) => e.id)])).toEqual([['queue_full', [id]]])
    await clock.advance(0)
  })
})

describe('a partial batch waits from its first event', () => {
  test('events tracked later do not move its time', async () => {
    const { clock, requests, client } = setup(accepted)
    client.track({ eventType: 'a' })
    await clock.advance(600)
    client.track({ eventType: 'b' })
    await clock.advance(399)
    expect(requests).toHaveLength(0)
    await clock.advance(1)
    expect(requests.map((r) => eventsOf(r).map((e) => e.eventType))).toEqual([['a', 'b']])
  })
})

describe('a batch is cut short of 1,000,000 characters of events', () => {
  /** An event whose JSON, as sent, is exactly `length` characters. */
  const sized = (length: number, name: string) => {
    const event = {
      eventType: name,
      id: '0190f1e2-7a3b-7c4d-8e5f-a0b1c2d3e4f5',
      timestamp: '2026-11-27T09:00:00.000Z',
      properties: { pad: '' },
    }
    event.properties.pad = 'x'.repeat(length - JSON.stringify(event).length)
    expect(JSON.stringify(event)).toHaveLength(length)
    return event
  }
  const sent = (requests: SeenRequest[]) => requests.map((r) => eventsOf(r).map((e) => e.eventType))

  test('two events and the comma between them of exactly 1,000,000 characters go together', async () => {
    const { clock, requests, client } = setup(accepted)
    client.track(sized(600_000, 'a'))
    client.track(sized(399_999, 'b'))
    await clock.advance(1000)
    expect(sent(requests)).toEqual([['a', 'b']])
  })

  test('one character more and the second goes in the next batch; nothing is lost', async () => {
    const { clock, requests, client } = setup(accepted)
    client.track(sized(600_000, 'a'))
    client.track(sized(400_000, 'b'))
    client.track(sized(200, 'c'))
    await clock.advance(1000)
    await clock.advance(1000)
    expect(sent(requests)).toEqual([['a'], ['b', 'c']])
    expect(client.stats()).toEqual({ queued: 0, committed: 3, dropped: 0 })
  })

  test('an event of more than 1,000,000 characters goes alone, and its 413 drops it alone', async () => {
    const { clock, requests, client, failures } = setup((request) =>
      request.body!.length > 1_048_576 ? refusal(413, 'payload_too_large', 'The body is over 1 MiB.') : accepted(request),
    )
    client.track(sized(200, 'a'))
    client.track(sized(1_100_000, 'big'))
    client.track(sized(200, 'c'))
    await clock.advance(1000)
    await clock.advance(1000)
    await clock.advance(1000)
    expect(sent(requests)).toEqual([['a'], ['big'], ['c']])
    expect(failures.map((f) => [f.reason, f.error?.status, f.events.map((e) => e.eventType)])).toEqual([['refused', 413, ['big']]])
    expect(client.stats()).toEqual({ queued: 0, committed: 2, dropped: 1 })
  })
})

describe('which refusals drop one event', () => {
  const types = (count: number) => Array.from({ length: count }, (_, i) => `e${i}`)

  test('events[12] of a batch of 13 is the thirteenth event', async () => {
    const { clock, requests, client, failures } = setup((request) =>
      eventsOf(request).length === 13 ? refusal(400, 'invalid_request', 'Refused.', {}, 'events[12].eventType') : accepted(request),
    )
    for (const eventType of types(13)) client.track({ eventType })
    await clock.advance(1000)
    expect(failures.map((f) => f.events.map((e) => e.eventType))).toEqual([['e12']])
    expect(eventsOf(requests[1]!)).toHaveLength(12)
  })

  test('an index just past the batch drops the whole batch', async () => {
    const { clock, requests, client, failures } = setup(() => refusal(400, 'invalid_request', 'Refused.', {}, 'events[2].eventType'))
    client.track({ eventType: 'a' })
    client.track({ eventType: 'b' })
    await clock.advance(1000)
    expect(failures.map((f) => f.events.length)).toEqual([2])
    expect(requests).toHaveLength(1)
  })

  test('a batch of one refused by its index is dropped, not sent again empty', async () => {
    const { clock, requests, client, failures } = setup(() => refusal(400, 'invalid_request', 'Refused.', {}, 'events[0].eventType'))
    client.track({ eventType: 'a' })
    await clock.advance(5000)
    expect(requests).toHaveLength(1)
    expect(failures.map((f) => f.events.length)).toEqual([1])
  })

  test('only a 400 names an event: another final refusal with a field drops the whole batch', async () => {
    const { clock, requests, client, failures } = setup(() => refusal(403, 'insufficient_scope', 'No.', {}, 'events[0].eventType'))
    client.track({ eventType: 'a' })
    client.track({ eventType: 'b' })
    await clock.advance(1000)
    expect(failures.map((f) => [f.error?.status, f.events.length])).toEqual([[403, 2]])
    expect(requests).toHaveLength(1)
  })

  test('a 413 of a single event drops it: there is no half to send', async () => {
    const { clock, requests, client, failures } = setup(() => refusal(413, 'payload_too_large', 'Too large.'))
    client.track({ eventType: 'a' })
    await clock.advance(5000)
    expect(requests).toHaveLength(1)
    expect(failures.map((f) => [f.reason, f.events.length])).toEqual([['refused', 1]])
  })
})

describe('a deadline while a Retry-After runs', () => {
  test('flush(t) called while a Retry-After runs waits for it before the next attempt', async () => {
    const { clock, requests, client } = setup((request, index) =>
      index === 0 ? refusal(503, 'unavailable', 'Busy.', { 'retry-after': '5' }) : accepted(request),
    )
    client.track({ eventType: 'a' })
    await clock.advance(1000) // sent at 1 s: Retry-After until 6 s
    const first = requests[0]!.at
    await clock.advance(1000)
    const flushing = client.flush(20_000)
    await clock.advance(20_000)
    expect((await flushing).committed).toBe(1)
    expect(requests.map((r) => r.at - first)).toEqual([0, 5000])
  })

  test('three waits: attempts follow the nearest deadline, wherever it was given', async () => {
    const { clock, requests, client } = setup(down, { minRetryDelay: 1000, maxRetryDelay: 30_000 })
    client.track({ eventType: 'a' })
    await clock.advance(1000)
    const start = clock.now() // the first attempt failed just now
    void client.flush(60_000)
    void client.flush(3_000)
    void client.flush(90_000) // the nearer one is neither first nor last
    await clock.advance(3_000)
    // A quarter of the time left before the last attempt (at 2 s: the deadline less 1 s for
    // the answer), at least 250 ms; the 60 s wait would have kept the backoff's 1 s.
    expect(requests.map((r) => r.at - start)).toEqual([0, 500, 875, 1156.25, 1406.25, 1656.25, 1906.25, 2000])
    await stop(client, clock)
  })
})

describe('waits and timers', () => {
  test('a flush with no timeout is still answered after another flush timed out', async () => {
    const { clock, client } = setup((request, index) => (index < 3 ? down() : accepted(request)))
    client.track({ eventType: 'a' })
    let unbounded: unknown
    void client.flush().then((stats) => (unbounded = stats))
    const bounded = client.flush(500)
    await clock.advance(500)
    expect((await bounded).queued).toBe(1)
    expect(unbounded).toBeUndefined()
    await clock.advance(60_000)
    expect(unbounded).toEqual({ queued: 0, committed: 1, dropped: 0 })
  })

  test('once everything is committed, no timer is left to keep the process alive', async () => {
    const { clock, client } = setup((request, index) => (index === 0 ? down() : accepted(request)))
    client.track({ eventType: 'a' })
    await clock.advance(1000) // the first attempt fails
    const flushed = client.flush(10_000)
    await clock.advance(1000) // sent again after the backoff, and committed: long before the deadline
    expect((await flushed).committed).toBe(1)
    expect(clock.pendingTimers).toBe(0)
    client.track({ eventType: 'b' })
    const stopped = client.shutdown(10_000)
    await clock.advance(0)
    expect((await stopped).committed).toBe(2)
    expect(clock.pendingTimers).toBe(0)
  })

  test('a Retry-After past the last attempt is kept: no attempt before it, none squeezed in before the deadline', async () => {
    const { clock, requests, client } = setup((request, index) =>
      index === 0 ? refusal(503, 'unavailable', 'Busy.', { 'retry-after': '20' }) : accepted(request),
    )
    client.track({ eventType: 'a' })
    const start = clock.now()
    const flushed = client.flush(10_000)
    await clock.advance(10_000)
    expect((await flushed).queued).toBe(1)
    expect(requests.map((r) => r.at - start)).toEqual([0])
    await clock.advance(10_000)
    expect(requests.map((r) => r.at - start)).toEqual([0, 20_000])
  })

  test('no attempt after the last one a deadline allows, also once the wait is over', async () => {
    const { clock, requests, client } = setup(down)
    client.track({ eventType: 'a' })
    const start = clock.now()
    const flushed = client.flush(2000)
    await clock.advance(1500)
    // Between the last attempt (at 1 s) and the deadline nothing is due: the deadline's timer alone waits.
    expect(clock.pendingTimers).toBe(1)
    await clock.advance(500)
    expect((await flushed).queued).toBe(1)
    const during = requests.map((r) => r.at - start)
    expect(Math.max(...during)).toBeLessThanOrEqual(1000)
    // After the deadline, the backoff again (1 s doubled, jittered at 0.5: 1.5 s from the last failure).
    await clock.advance(400)
    expect(requests.map((r) => r.at - start)).toEqual(during)
    await stop(client, clock)
  })
})

describe('a transport that throws', () => {
  test('a send that throws is retried like a network error, and the event is committed', async () => {
    const clock = new FakeClock()
    let calls = 0
    const send = async (): Promise<Result<unknown>> => {
      calls++
      if (calls === 1) throw new Error('a custom transport failed')
      return { ok: true, data: { accepted: 1 }, status: 202, requestId: 'req_1', rateLimit: null, headers: new Headers() }
    }
    const delivery = new Delivery(send, clock, { random: () => 0.5 })
    delivery.track({ eventType: 'a' })
    await clock.advance(1000)
    expect(calls).toBe(1)
    await clock.advance(2000)
    expect(calls).toBe(2)
    expect(delivery.stats()).toEqual({ queued: 0, committed: 1, dropped: 0 })
  })
})
