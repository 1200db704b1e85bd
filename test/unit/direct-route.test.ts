import { createRequestContext } from '../../src/http/request-context.ts'
import { expect, test } from 'bun:test'
import type { Gate, Grant } from '../../src/access/gate.ts'
import type { ActiveKey } from '../../src/access/key-store.ts'
import { ApiError } from '../../src/errors.ts'
import { createDirectRoutes } from '../../src/http/direct-route.ts'
import { createLogger } from '../../src/observability/log.ts'

const key = { id: 'key-1', businessId: 'business-1', type: 'public' } as unknown as ActiveKey

/** Direct routes whose gate grants every request; `seen` records what the observer is told. */
function routes() {
  const seen: { status: number; startedAt: number; handledAt: number }[] = []
  let handledAt = Number.NaN
  const gate: Gate = {
    check: async (): Promise<Grant> => {
      handledAt = performance.now()
      return { key, origin: null, rateLimitHeaders: null }
    },
    count: () => {},
  }
  const direct = createDirectRoutes({
    requestContext: createRequestContext(),
    gate,
    logger: createLogger({ write: () => {} }),
    observe: (_request, _route, status, startedAt) => seen.push({ status, startedAt, handledAt }),
    clientAddressOf: () => '198.51.100.1',
  })
  return { direct, seen }
}

/** Holds the event loop for `ms`: the turn cannot end meanwhile. */
function busy(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

test('a route without a body is handled at the end of the turn, and its duration counts from its arrival', async () => {
  const { direct, seen } = routes()
  const answer = direct.route({ method: 'GET', path: '/api/v0/test', access: { scope: null, public: true }, body: null }, () => ({
    status: 200,
    body: { ok: true },
  }))
  const answered = answer(new Request('http://localhost/api/v0/test'), null)
  const returnedAt = performance.now()
  // Not handled within the turn it arrived in.
  expect(seen).toEqual([])
  busy(30)
  const response = await answered
  expect(response.status).toBe(200)
  expect(await response.text()).toBe('{"ok":true}')
  expect(seen).toHaveLength(1)
  const [observed] = seen
  // Handled after the turn was held, yet timed from before answer() returned.
  expect(observed!.handledAt).toBeGreaterThanOrEqual(returnedAt + 30)
  expect(observed!.startedAt).toBeLessThanOrEqual(returnedAt)
})

test('a route with a body is handled on arrival (its write must not wait a turn more for the group commit)', async () => {
  const { direct, seen } = routes()
  let handlerRanAt = Number.NaN
  const answer = direct.route(
    { method: 'POST', path: '/api/v0/test', access: { scope: null, public: true }, body: { type: 'object' } as never },
    (_access, body) => {
      handlerRanAt = performance.now()
      return { status: 202, body }
    },
  )
  const before = performance.now()
  const answered = answer(
    new Request('http://localhost/api/v0/test', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '9' },
      body: '{"a":"b"}',
    }),
    null,
  )
  const returnedAt = performance.now()
  // The gate ran before answer() returned; the body is read in this turn's microtasks.
  for (let i = 0; i < 20; i++) await Promise.resolve()
  const handlerBeforeTurnEnd = handlerRanAt
  const response = await answered
  expect(response.status).toBe(202)
  expect(await response.json()).toEqual({ a: 'b' })
  expect(seen[0]!.handledAt).toBeGreaterThanOrEqual(before)
  expect(seen[0]!.handledAt).toBeLessThanOrEqual(returnedAt)
  expect(Number.isNaN(handlerBeforeTurnEnd)).toBe(false)
})

test('a body that arrives after its route ran out of room is refused with the room, not parsed', async () => {
  const { direct } = routes()
  let full = false
  let handled = 0
  const answer = direct.route(
    {
      method: 'POST',
      path: '/api/v0/test',
      access: {
        scope: null,
        public: true,
        checkRoom: () => {
          if (full) throw new ApiError('unavailable', 'Too many events are waiting to be written.', { headers: { 'retry-after': '1' } })
        },
      },
      body: { type: 'object' } as never,
    },
    () => {
      handled++
      return { status: 202, body: {} }
    },
  )
  // A body still on its way (chunked): there was room when the request was granted.
  async function sendSlowly(text: string) {
    let finish!: (controller: ReadableStreamDefaultController<Uint8Array>) => void
    const started = new Promise<ReadableStreamDefaultController<Uint8Array>>((resolve) => (finish = resolve))
    const body = new ReadableStream<Uint8Array>({ start: (controller) => finish(controller) })
    const answered = answer(
      new Request('http://localhost/api/v0/test', { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      null,
    )
    const controller = await started
    return {
      answered,
      arrive() {
        controller.enqueue(new TextEncoder().encode(text))
        controller.close()
      },
    }
  }

  // With room, a malformed body is the client's 400: the body is parsed.
  const withRoom = await sendSlowly('{not json')
  withRoom.arrive()
  expect((await withRoom.answered).status).toBe(400)

  // The room goes while the body is on its way: 503 with Retry-After, and the body is not parsed (no 400).
  const late = await sendSlowly('{not json')
  for (let i = 0; i < 5; i++) await Promise.resolve()
  full = true
  late.arrive()
  const refused = await late.answered
  expect(refused.status).toBe(503)
  expect(refused.headers.get('retry-after')).toBe('1')
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unavailable')
  expect(handled).toBe(0)
})
