import { describe, expect, test } from 'bun:test'
import { accepted, eventsOf, KEY, refusal, type SeenRequest, settle, trackingClient } from './fakes.ts'

// track() (clients/node/README.md), on a clock the test moves: batching, backoff, Retry-After,
// refusals, the queue's bound, flush and shutdown, without waiting for real time.

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const setup = trackingClient

describe('an event is stamped once, at the call', () => {
  test('its UUIDv7 id and timestamp come from the clock at track(), and a retry sends the same bytes', async () => {
    const { clock, requests, client } = setup((request, index) => (index === 0 ? new TypeError('connection refused') : accepted(request)))
    const calledAt = clock.now()
    const id = client.track({ eventType: 'order_paid', properties: { total: 42 } })
    expect(id).toMatch(UUID_V7)
    expect(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16)).toBe(calledAt)

    await clock.advance(1000) // the interval: the first try fails
    await clock.advance(30_000) // the retry, whatever its delay
    expect(requests).toHaveLength(2)
    expect(requests[1]!.body).toBe(requests[0]!.body!)
    expect(eventsOf(requests[1]!)).toEqual([
      { eventType: 'order_paid', properties: { total: 42 }, id, timestamp: new Date(calledAt).toISOString() },
    ])
    expect(requests[1]!.at).toBeGreaterThan(calledAt + 1000)
  })

  test('an id and timestamp the caller gives are kept', async () => {
    const { clock, requests, client } = setup(accepted)
    const given = { id: '0190f1e2-7a3b-7c4d-8e5f-a0b1c2d3e4f5', timestamp: '2026-11-27T09:00:00.000Z' }
    expect(client.track({ eventType: 'signup', ...given })).toBe(given.id)
    await clock.advance(1000)
    expect(eventsOf(requests[0]!)).toEqual([{ eventType: 'signup', ...given }])
  })

  test('what JSON cannot hold is refused at the call, not later', () => {
    const { client } = setup(accepted)
    expect(() => client.track({ eventType: 'x', properties: { big: 1n } })).toThrow(TypeError)
    expect(client.stats().queued).toBe(0)
  })
})

describe('batches, by count or by time', () => {
  test('a batch goes as soon as it holds batchSize events (default 100), a partial one after flushInterval (default 1 s)', async () => {
    const { clock, requests, client } = setup(accepted)
    for (let i = 0; i < 99; i++) client.track({ eventType: 'e' })
    await clock.advance(999)
    expect(requests).toHaveLength(0)
    client.track({ eventType: 'e' })
    await settle()
    expect(requests.map((r) => eventsOf(r).length)).toEqual([100])

    client.track({ eventType: 'e' })
    await clock.advance(999)
    expect(requests).toHaveLength(1)
    await clock.advance(1)
    expect(requests.map((r) => eventsOf(r).length)).toEqual([100, 1])
    expect(client.stats()).toEqual({ queued: 0, committed: 101, dropped: 0 })
  })

  test('250 events go as 100, 100 and 50, to POST /api/v0/analytics with the key', async () => {
    const { clock, requests, client } = setup(accepted)
    for (let i = 0; i < 250; i++) client.track({ eventType: 'e', properties: { i } })
    await clock.advance(1000)
    expect(requests.map((r) => eventsOf(r).length)).toEqual([100, 100, 50])
    expect(requests.flatMap(eventsOf).map((e) => e.properties)).toEqual(Array.from({ length: 250 }, (_, i) => ({ i })))
    expect(requests[0]!.method).toBe('POST')
    expect(requests[0]!.url.href).toBe('http://keygate.test/api/v0/analytics')
    expect(requests[0]!.headers.get('authorization')).toBe(`Bearer ${KEY}`)
    expect(requests[0]!.headers.get('content-type')).toBe('application/json')
  })

  test('batchSize is at most 500, what one request takes', () => {
    expect(() => setup(accepted, { batchSize: 501 })).toThrow(/batchSize must be an integer from 1 to 500/)
    expect(() => setup(accepted, { batchSize: 0 })).toThrow(RangeError)
    expect(() => setup(accepted, { batchSize: 500 })).not.toThrow()
  })
})

describe('retries', () => {
  test('a network error, 408, 429, 500, 502, 503 and 504 are retried with backoff doubling from 1 s to at most 30 s', async () => {
    const failing: (Response | Error)[] = [
      new TypeError('fetch failed'),
      refusal(408, 'invalid_request', 'timeout'),
      refusal(429, 'rate_limited', 'over the budget'),
      refusal(500, 'internal_error', 'fault'),
      refusal(502, 'internal_error', 'bad gateway'),
      refusal(503, 'unavailable', 'database down'),
      refusal(504, 'internal_error', 'gateway timeout'),
      refusal(503, 'unavailable', 'database down'),
    ]
    const { clock, requests, client, failures } = setup((request, index) => failing[index] ?? accepted(request))
    client.track({ eventType: 'e' })
    await clock.advance(1000)
    for (let i = 0; i < failing.length; i++) await clock.advance(30_000)
    const delays = requests.slice(1).map((r, i) => r.at - requests[i]!.at)
    // random() = 0.5: three quarters of each ceiling (1, 2, 4, 8, 16, 30, 30, 30 s), never under 1 s.
    expect(delays).toEqual([1000, 1500, 3000, 6000, 12_000, 22_500, 22_500, 22_500])
    expect(client.stats()).toEqual({ queued: 0, committed: 1, dropped: 0 })
    expect(failures).toEqual([])
  })

  test('the jitter spreads each delay over the upper half of its ceiling, never below 1 s', async () => {
    for (const [random, expected] of [
      [0, [1000, 1000, 2000, 4000]],
      [0.999_999, [1000, 2000, 4000, 8000]],
    ] as const) {
      const { clock, requests, client } = setup((request, index) => (index < 4 ? refusal(503, 'unavailable', 'down') : accepted(request)), {
        random: () => random,
      })
      client.track({ eventType: 'e' })
      await clock.advance(1000)
      for (let i = 0; i < 4; i++) await clock.advance(10_000)
      expect(requests.slice(1).map((r, i) => Math.round((r.at - requests[i]!.at) / 10) * 10)).toEqual([...expected])
    }
  })

  test('never before Retry-After, even when the backoff is shorter', async () => {
    const { clock, requests, client } = setup((request, index) =>
      index === 0
        ? refusal(429, 'rate_limited', 'over', { 'retry-after': '7' })
        : index === 1
          ? refusal(503, 'unavailable', 'queue full', { 'retry-after': '3' })
          : accepted(request),
    )
    client.track({ eventType: 'e' })
    await clock.advance(1000)
    await clock.advance(6999)
    expect(requests).toHaveLength(1)
    await clock.advance(1)
    expect(requests).toHaveLength(2)
    await clock.advance(2999)
    expect(requests).toHaveLength(2)
    await clock.advance(1)
    expect(requests).toHaveLength(3)
    expect(client.stats().committed).toBe(1)
  })

  test('events tracked while a batch waits to be retried wait behind it, and the queue drains in order', async () => {
    const { clock, requests, client } = setup((request, index) => (index === 0 ? refusal(503, 'unavailable', 'down') : accepted(request)), {
      batchSize: 2,
    })
    client.track({ eventType: 'a' })
    client.track({ eventType: 'b' })
    await settle()
    client.track({ eventType: 'c' })
    client.track({ eventType: 'd' })
    client.track({ eventType: 'e' })
    await clock.advance(5000)
    expect(
      requests.map((r) =>
        eventsOf(r)
          .map((e) => e.eventType)
          .join(''),
      ),
    ).toEqual(['ab', 'ab', 'cd', 'e'])
  })
})

describe('refusals', () => {
  test('a final 4xx drops the batch, reports its events and the error to onError, and is not retried', async () => {
    const { clock, requests, client, failures } = setup(() => refusal(401, 'invalid_api_key', 'The key is not known or was revoked.'))
    const ids = [client.track({ eventType: 'a' }), client.track({ eventType: 'b' })]
    const flushed = client.flush()
    await clock.advance(60_000)
    await flushed
    expect(requests).toHaveLength(1)
    expect(failures).toHaveLength(1)
    expect(failures[0]!.reason).toBe('refused')
    expect(failures[0]!.events.map((e) => e.id)).toEqual(ids)
    expect(failures[0]!.error).toMatchObject({
      code: 'invalid_api_key',
      status: 401,
      requestId: 'req_401',
      message: 'The key is not known or was revoked.',
    })
    expect(client.stats()).toEqual({ queued: 0, committed: 0, dropped: 2 })
  })

  test('a 400 naming one event of the batch in error.field drops that event only: the others are sent again without it', async () => {
    // As the service does: the first invalid event of a batch is named by its path in
    // `field`. The message is reworded and names another event: the client must not read it.
    const service = (request: SeenRequest) => {
      const bad = eventsOf(request).findIndex((e) => e.eventType.includes(' '))
      return bad === -1
        ? accepted(request)
        : refusal(400, 'invalid_request', 'One event was refused (not "events[0]"): its type has a space.', {}, `events[${bad}].eventType`)
    }
    const { clock, requests, client, failures } = setup(service)
    const types = ['a', 'b c', 'd', 'e f', 'g']
    const ids = types.map((eventType) => client.track({ eventType }))
    await clock.advance(1000)
    expect(requests.map((r) => eventsOf(r).map((e) => e.eventType))).toEqual([types, ['a', 'd', 'e f', 'g'], ['a', 'd', 'g']])
    expect(failures.map((f) => f.events.map((e) => e.id))).toEqual([[ids[1]!], [ids[3]!]])
    expect(failures.map((f) => [f.reason, f.error?.code, f.error?.status])).toEqual([
      ['refused', 'invalid_request', 400],
      ['refused', 'invalid_request', 400],
    ])
    expect(client.stats()).toEqual({ queued: 0, committed: 3, dropped: 2 })
  })

  test('a 400 that names no event drops the whole batch', async () => {
    const { clock, client, failures } = setup(() => refusal(400, 'invalid_request', 'Invalid body: expected an object.'))
    client.track({ eventType: 'a' })
    client.track({ eventType: 'b' })
    await clock.advance(1000)
    expect(failures.map((f) => f.events.length)).toEqual([2])
  })

  test('a 400 whose message alone names an event drops the whole batch: only error.field says which event', async () => {
    const { clock, client, failures } = setup(() =>
      refusal(400, 'invalid_request', 'Invalid body field "events[1].eventType": must be 1-64 characters.'),
    )
    client.track({ eventType: 'a' })
    client.track({ eventType: 'b' })
    await clock.advance(1000)
    expect(failures.map((f) => [f.events.length, f.error?.field])).toEqual([[2, null]])
  })

  test('a 400 whose field is not an event of the batch drops the whole batch', async () => {
    for (const field of ['events', 'events[7].eventType', 'eventType', 'xevents[0].id']) {
      const { clock, client, failures } = setup(() => refusal(400, 'invalid_request', 'Refused.', {}, field))
      client.track({ eventType: 'a' })
      client.track({ eventType: 'b' })
      await clock.advance(1000)
      expect(failures.map((f) => [f.events.length, f.error?.field])).toEqual([[2, field]])
    }
  })

  test('413 splits the batch in halves until each fits, losing nothing', async () => {
    const { clock, requests, client, failures } = setup((request) =>
      eventsOf(request).length > 2 ? refusal(413, 'payload_too_large', 'The body is over 1 MiB.') : accepted(request),
    )
    for (const eventType of ['a', 'b', 'c', 'd', 'e']) client.track({ eventType })
    await clock.advance(1000)
    const sent = requests.filter((r) => eventsOf(r).length <= 2).flatMap((r) => eventsOf(r).map((e) => e.eventType))
    expect(sent).toEqual(['a', 'b', 'c', 'd', 'e'])
    expect(failures).toEqual([])
    expect(client.stats().committed).toBe(5)
  })

  test('an onError that throws does not stop delivery', async () => {
    const { clock, client } = setup((request, index) => (index === 0 ? refusal(403, 'insufficient_scope', 'no') : accepted(request)), {
      onError: () => {
        throw new Error('a careless callback')
      },
    })
    client.track({ eventType: 'a' })
    await clock.advance(1000)
    client.track({ eventType: 'b' })
    await clock.advance(1000)
    expect(client.stats()).toEqual({ queued: 0, committed: 1, dropped: 1 })
  })
})

describe('the bounded queue', () => {
  test('past maxQueueSize the oldest waiting events are dropped (never the batch in flight) and reported together', async () => {
    const { clock, requests, client, failures } = setup(() => 'hang', { batchSize: 2, maxQueueSize: 5, timeoutMs: 60_000 })
    const ids = Array.from({ length: 4 }, (_, i) => client.track({ eventType: `e${i}` }))
    await settle()
    expect(requests).toHaveLength(1) // e0, e1 in flight
    ids.push(client.track({ eventType: 'e4' }), client.track({ eventType: 'e5' }), client.track({ eventType: 'e6' }))
    expect(client.stats()).toEqual({ queued: 5, committed: 0, dropped: 2 })
    await settle()
    expect(failures).toHaveLength(1)
    expect(failures[0]!.reason).toBe('queue_full')
    expect(failures[0]!.events.map((e) => e.id)).toEqual([ids[2]!, ids[3]!])
    expect(failures[0]!.error).toBeNull()
    await clock.advance(0)
  })

  test('the default bound is 10,000 events', async () => {
    const { client, failures } = setup(() => 'hang')
    for (let i = 0; i < 10_001; i++) client.track({ eventType: 'e' })
    await settle()
    expect(client.stats()).toMatchObject({ queued: 10_000, dropped: 1 })
    expect(failures.map((f) => [f.reason, f.events.length])).toEqual([['queue_full', 1]])
  })
})

describe('flush and shutdown', () => {
  test('flush sends a partial batch at once and resolves only once the service committed it', async () => {
    const { clock, requests, client } = setup((request, index) => (index < 2 ? refusal(503, 'unavailable', 'down') : accepted(request)))
    client.track({ eventType: 'a' })
    let flushed = false
    const flushing = client.flush().then(() => (flushed = true))
    await settle()
    expect(requests).toHaveLength(1)
    await clock.advance(2000)
    expect(flushed).toBe(false)
    await clock.advance(30_000)
    await flushing
    expect(client.stats()).toEqual({ queued: 0, committed: 1, dropped: 0 })
  })

  test('flush of an empty queue resolves at once', async () => {
    const { client } = setup(accepted)
    await client.flush()
  })

  test('shutdown(timeout) gives up on what the service never took, reports it, and takes no more events', async () => {
    const { clock, requests, client, failures } = setup(() => refusal(503, 'unavailable', 'down', { 'retry-after': '2' }))
    const ids = [client.track({ eventType: 'a' }), client.track({ eventType: 'b' })]
    let stats: unknown
    const stopping = client.shutdown(5000).then((s) => (stats = s))
    await clock.advance(4999)
    expect(stats).toBeUndefined()
    await clock.advance(1)
    await stopping
    expect(stats).toEqual({ queued: 0, committed: 0, dropped: 2 })
    expect(failures.map((f) => [f.reason, f.events.map((e) => e.id)])).toEqual([['shutdown', ids]])

    const sent = requests.length
    const late = client.track({ eventType: 'late' })
    await clock.advance(60_000)
    expect(requests).toHaveLength(sent)
    expect(failures.at(-1)).toMatchObject({ reason: 'shutdown', events: [{ id: late }] })
  })

  test('shutdown cancels the request in flight when its time is up', async () => {
    const { clock, client, failures } = setup(() => 'hang', { timeoutMs: 60_000 })
    client.track({ eventType: 'a' })
    const stopping = client.shutdown(3000)
    await clock.advance(3000)
    expect(await stopping).toEqual({ queued: 0, committed: 0, dropped: 1 })
    expect(failures.map((f) => f.reason)).toEqual(['shutdown'])
  })

  test('shutdown resolves as soon as everything is committed', async () => {
    const { requests, client } = setup(accepted)
    for (let i = 0; i < 150; i++) client.track({ eventType: 'e' })
    expect(await client.shutdown()).toEqual({ queued: 0, committed: 150, dropped: 0 })
    expect(requests.map((r) => eventsOf(r).length)).toEqual([100, 50])
  })
})

describe('a deadline: shutdown(t) and flush(t) spend their time on attempts that can be answered', () => {
  const down = () => new TypeError('connection refused')
  /** The service unreachable from `from` to `to` (clock times), accepting otherwise. */
  const outage = (from: number, to: number) => (request: SeenRequest) =>
    request.at >= from && request.at < to ? down() : accepted(request)
  /** Jitter draws in turn, then 0.5. */
  const draws = (...values: number[]) => {
    let next = 0
    return () => values[next++] ?? 0.5
  }

  test('the README worker: 1,000 events/s, the service away from 1.5 s to 7.5 s, shutdown(10_000) at 5 s: all 5,000 committed', async () => {
    const start = Date.parse('2026-11-27T10:00:00.000Z')
    // These draws put the backoff's retry 7.9 s after a failure at 7.2 s, past the deadline (15 s) without the deadline's schedule.
    const { clock, requests, client, failures } = setup(outage(start + 1500, start + 7500), { random: draws(0.5, 0.9, 0.4, 0.99) })
    for (let ms = 0; ms < 5000; ms += 10) {
      for (let i = 0; i < 10; i++) client.track({ eventType: 'order_paid', properties: { i: ms + i } })
      await clock.advance(10)
    }
    const calledAt = clock.now()
    const deadline = calledAt + 10_000
    let stats: unknown
    void client.shutdown(10_000).then((s) => (stats = s))
    await clock.advance(10_000)

    expect(stats).toEqual({ queued: 0, committed: 5000, dropped: 0 })
    expect(failures).toEqual([])
    const after = requests.filter((r) => r.at >= calledAt).map((r) => r.at)
    expect(after[0]).toBe(calledAt) // at once: the wait left from before the call is not kept
    expect(Math.max(...after)).toBeLessThanOrEqual(deadline - 1000)
    expect(requests.flatMap(eventsOf)).toHaveLength(5000 + 100 * requests.filter((r) => r.at >= start + 1500 && r.at < start + 7500).length)
  })

  test('a service that never comes back: attempts at once, then closer together, the last one 1 s before the deadline; then what is left is reported', async () => {
    const { clock, requests, client, failures } = setup(down)
    client.track({ eventType: 'a' })
    await clock.advance(4000) // tried at 1 s, 2 s and 3.5 s; the backoff's next try is at 6.5 s
    expect(requests.map((r) => r.at - requests[0]!.at)).toEqual([0, 1000, 2500])
    const deadline = clock.now() + 10_000
    const stopping = client.shutdown(10_000)
    await clock.advance(10_000)
    expect(await stopping).toEqual({ queued: 0, committed: 0, dropped: 1 })
    expect(failures.map((f) => f.reason)).toEqual(['shutdown'])
    // A quarter of the time left before the last attempt (the backoff's 6 s and 12 s are longer), at least 250 ms.
    expect(requests.slice(3).map((r) => Math.round(r.at - deadline))).toEqual([
      -10_000, -7750, -6062, -4797, -3848, -3136, -2602, -2201, -1901, -1651, -1401, -1151, -1000,
    ])
  })

  test('the last attempt leaves a shorter request timeout, or half a short window, for its answer', async () => {
    for (const [options, timeout, expected] of [
      [{ timeoutMs: 400 }, 2000, [0, 400, 700, 950, 1200, 1450, 1600]],
      [{}, 1000, [0, 250, 500]],
    ] as const) {
      const { clock, requests, client } = setup(down, { ...options, minRetryDelay: 1000 })
      client.track({ eventType: 'a' })
      const start = clock.now()
      const stopping = client.shutdown(timeout)
      await clock.advance(timeout)
      expect((await stopping).dropped).toBe(1)
      expect(requests.map((r) => r.at - start)).toEqual([...expected])
    }
  })

  test('a Retry-After that ends before the last attempt is waited for; one that ends after it is never cut short', async () => {
    const first = setup((request, index) =>
      index < 3 ? down() : index === 3 ? refusal(503, 'unavailable', 'failing over', { 'retry-after': '5' }) : accepted(request),
    )
    first.client.track({ eventType: 'a' })
    await first.clock.advance(4000)
    const calledAt = first.clock.now()
    const stopping = first.client.shutdown(10_000)
    await first.clock.advance(10_000)
    expect(await stopping).toEqual({ queued: 0, committed: 1, dropped: 0 })
    expect(first.requests.slice(3).map((r) => r.at - calledAt)).toEqual([0, 5000])

    const second = setup(() => refusal(429, 'rate_limited', 'over the budget', { 'retry-after': '20' }))
    second.client.track({ eventType: 'a' })
    await second.clock.advance(2000)
    const stopped = second.client.shutdown(10_000)
    await second.clock.advance(10_000)
    expect(await stopped).toEqual({ queued: 0, committed: 0, dropped: 1 })
    expect(second.requests).toHaveLength(1)
  })

  test('flush(t) in an outage sends at once and retries as the deadline nears: the service back before it gets everything', async () => {
    const start = Date.parse('2026-11-27T10:00:00.000Z')
    const { clock, requests, client, failures } = setup(outage(start, start + 6000))
    client.track({ eventType: 'a' })
    await clock.advance(4000) // tried at 1 s, 2 s and 3.5 s; the backoff's next try is at 6.5 s
    let stats: unknown
    void client.flush(5000).then((s) => (stats = s))
    await clock.advance(2500)
    expect(stats).toEqual({ queued: 0, committed: 1, dropped: 0 })
    expect(failures).toEqual([])
    // Last attempt at 8 s: waits of a quarter of the time left before it.
    expect(requests.map((r) => r.at - start)).toEqual([1000, 2000, 3500, 4000, 5000, 5750, 6312.5])
  })

  test('what flush(t) could not deliver in time stays queued, not dropped, and goes with the backoff once the service is back', async () => {
    let serviceUp = false
    const { clock, client, failures } = setup((request) => (serviceUp ? accepted(request) : down()))
    client.track({ eventType: 'a' })
    let stats: unknown
    void client.flush(2000).then((s) => (stats = s))
    await clock.advance(1999)
    expect(stats).toBeUndefined()
    await clock.advance(1)
    expect(stats).toEqual({ queued: 1, committed: 0, dropped: 0 })
    serviceUp = true
    await clock.advance(60_000)
    expect(client.stats()).toEqual({ queued: 0, committed: 1, dropped: 0 })
    expect(failures).toEqual([])
  })

  test('a timeout that is not 0 or more milliseconds is refused, and shutdown then takes events still', async () => {
    const { client } = setup(accepted)
    client.track({ eventType: 'a' })
    await expect(client.shutdown(Number.NaN)).rejects.toThrow(RangeError)
    await expect(client.flush(-1)).rejects.toThrow(/0 or more milliseconds/)
    client.track({ eventType: 'b' })
    expect(client.stats().queued).toBe(2)
  })
})
