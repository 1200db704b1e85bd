import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { analyticsEvents, apiKeys } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { POSTGRES_INSERTS_IN_FLIGHT } from '../../src/config.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { testDatabase, testEventsDatabase } from '../support/database.ts'
import { call, seedBusiness, seedKey, testService } from '../support/service.ts'
import { raw, statusOf } from '../support/raw-http.ts'

// The hot routes (src/http/direct-route.ts) are served by Bun's router straight to their
// answer function, while `app.handle` reaches the same function through Elysia's route.
// Every other test calls `app.handle`; this one checks that the listening server gives
// the same answers, counts them the same way, and leaves the rest of each path to Elysia.

const ORIGIN = 'https://www.example.com'
let service: Service
let base: string
let key: string
let businessId: string

beforeAll(async () => {
  service = await testService()
  service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
  base = `http://127.0.0.1:${service.app.server!.port}`
})

// Every test starts on empty tables (test/support/preload.ts).
beforeEach(async () => {
  businessId = await seedBusiness(service)
  key = (await seedKey(service, businessId)).key
})

afterAll(async () => {
  await service.app.stop(true)
})

/** The answer without what differs per request. */
async function comparable(response: Response) {
  const headers = Object.fromEntries([...response.headers].filter(([name]) => !['x-request-id', 'date', 'content-length'].includes(name)))
  const body = (await response.json()) as Record<string, unknown>
  const error = body.error as { requestId?: string } | undefined
  if (error) expect(error.requestId).toBe(response.headers.get('x-request-id')!)
  return { status: response.status, headers, body: error ? { ...error, requestId: undefined } : body }
}

function overSocket(path: string, init: { method?: string; key?: string | null; origin?: string; body?: string } = {}) {
  const headers: Record<string, string> = {}
  if (init.key) headers.authorization = `Bearer ${init.key}`
  if (init.origin) headers.origin = init.origin
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  return fetch(`${base}${path}`, { method: init.method ?? 'GET', headers, body: init.body })
}

describe('the listening server answers the hot routes as app.handle does', () => {
  const cases: {
    name: string
    status: number
    path: string
    method?: string
    key?: 'valid' | 'unknown' | null
    origin?: string
    body?: string
  }[] = [
    { name: 'whoami granted', status: 200, path: '/api/v0/whoami', key: 'valid', origin: ORIGIN },
    { name: 'whoami without a key', status: 401, path: '/api/v0/whoami', key: null, origin: ORIGIN },
    { name: 'whoami with an unknown key', status: 401, path: '/api/v0/whoami', key: 'unknown', origin: ORIGIN },
    {
      name: 'whoami from an origin the key does not allow',
      status: 403,
      path: '/api/v0/whoami',
      key: 'valid',
      origin: 'https://evil.example.net',
    },
    {
      name: 'a page view',
      status: 202,
      path: '/api/v0/analytics',
      method: 'POST',
      key: 'valid',
      origin: ORIGIN,
      body: '{"eventType":"page_view"}',
    },
    {
      name: 'a page view with a misspelt field',
      status: 400,
      path: '/api/v0/analytics',
      method: 'POST',
      key: 'valid',
      origin: ORIGIN,
      body: '{"eventTyp":"page_view"}',
    },
    {
      name: 'a page view that is not JSON',
      status: 400,
      path: '/api/v0/analytics',
      method: 'POST',
      key: 'valid',
      origin: ORIGIN,
      body: '{',
    },
    { name: 'a method the path does not take', status: 405, path: '/api/v0/whoami', method: 'PUT', key: 'valid', origin: ORIGIN },
  ]

  for (const c of cases) {
    test(c.name, async () => {
      const sent = { ...c, key: c.key === 'valid' ? key : c.key === 'unknown' ? `pk_${'0'.repeat(32)}` : null }
      const served = await comparable(await overSocket(c.path, sent))
      const handled = await comparable(await call(service, c.path, { ...sent, body: c.body }))
      expect(served).toEqual(handled)
      expect(served.status).toBe(c.status)
    })
  }
})

test("answers ready at once go out at the end of the turn, with the rest of the turn's: whoami granted and refused", async () => {
  const whoami = service.services.direct.served['/api/v0/whoami']!.GET!
  const request = (withKey: boolean) =>
    new Request(`${base}/api/v0/whoami`, { headers: withKey ? { authorization: `Bearer ${key}`, origin: ORIGIN } : {} })
  // The first use loads the key from the database; from then on its answer is ready at once.
  expect((await whoami(request(true), null)).status).toBe(200)
  const settled: number[] = []
  void whoami(request(true), null).then((response) => settled.push(response.status))
  void whoami(request(false), null).then((response) => settled.push(response.status))
  for (let i = 0; i < 10; i++) await Promise.resolve()
  expect(settled).toEqual([])
  await new Promise<void>((resolve) => setImmediate(resolve))
  expect(settled.sort()).toEqual([200, 401])
})

test("a private key's answer carries its RateLimit headers, served or handled", async () => {
  const privateKey = (await seedKey(service, businessId, { type: 'private', rateLimit: { limit: 50, windowSeconds: 60 } })).key
  const served = await overSocket('/api/v0/whoami', { key: privateKey })
  const handled = await call(service, '/api/v0/whoami', { key: privateKey })
  for (const response of [served, handled]) {
    expect(response.status).toBe(200)
    expect(response.headers.get('ratelimit-limit')).toBe('50')
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
  }
  expect(served.headers.get('ratelimit-remaining')).toBe('49')
  expect(handled.headers.get('ratelimit-remaining')).toBe('48')
})

test('a request served directly is counted, used and stored like any other', async () => {
  const before = service.metrics.render()
  const count = (text: string, route: string, method: string, status: number) =>
    Number(
      text.match(
        new RegExp(`^keygate_http_requests_total\\{route="${route}",method="${method}",status="${status}"\\} (\\d+)$`, 'm'),
      )?.[1] ?? 0,
    )
  const whoami = await overSocket('/api/v0/whoami', { key, origin: ORIGIN })
  expect(whoami.status).toBe(200)
  const tracked = await overSocket('/api/v0/analytics', { method: 'POST', key, origin: ORIGIN, body: '{"eventType":"served_directly"}' })
  expect(tracked.status).toBe(202)
  const after = service.metrics.render()
  expect(count(after, '/api/v0/whoami', 'GET', 200)).toBe(count(before, '/api/v0/whoami', 'GET', 200) + 1)
  expect(count(after, '/api/v0/analytics', 'POST', 202)).toBe(count(before, '/api/v0/analytics', 'POST', 202) + 1)

  const stored = await (await testEventsDatabase()).db
    .select()
    .from(analyticsEvents)
    .where(eq(analyticsEvents.eventType, 'served_directly'))
  expect(stored.map((row) => [row.businessId, row.origin])).toEqual([[businessId, ORIGIN]])
  await service.services.lastUsed.flush()
  const { db } = await testDatabase()
  const [row] = await db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.businessId, businessId))
  expect(row!.lastUsedAt).not.toBeNull()
})

test('the preflight of a hot route is still answered by Elysia', async () => {
  const response = await fetch(`${base}/api/v0/analytics`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  })
  expect(response.status).toBe(204)
  expect(response.headers.get('access-control-allow-methods')).toContain('POST')
})

test('hostile requests to the hot routes get the same 4xx over the socket as through app.handle, never a 500', async () => {
  const privateKey = (await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_WRITE'] })).key
  const deep = `${'['.repeat(40)}${']'.repeat(40)}`
  const hostile: { path: string; method?: string; key?: string | null; origin?: string; body?: string }[] = [
    { path: '/api/v0/whoami', key: privateKey, origin: `https://${'a'.repeat(8000)}.example.com` },
    { path: '/api/v0/whoami', key: privateKey, origin: 'https://ünïcödé.example.com' },
    { path: '/api/v0/whoami', key: `${key}\u00ff`, origin: ORIGIN },
    { path: '/api/v0/whoami', key: 'sk_'.padEnd(4000, 'x'), origin: ORIGIN },
    ...['null', '[]', '"x"', '0', deep, '{"events":[]}', '{"eventType":"a","properties":{"__proto__":{}}}'].map((body) => ({
      path: '/api/v0/analytics',
      method: 'POST',
      key,
      origin: ORIGIN,
      body,
    })),
  ]
  for (const request of hostile) {
    const served = await overSocket(request.path, request)
    const handled = await call(service, request.path, request)
    expect([served.status, handled.status]).toEqual([handled.status, handled.status])
    expect(served.status).toBeGreaterThanOrEqual(200)
    expect(served.status).toBeLessThan(500)
    await served.arrayBuffer()
    await handled.arrayBuffer()
  }
  // A private key is served from any Origin: many origins must not grow without bound or fail.
  for (let i = 0; i < 300; i++) {
    const response = await overSocket('/api/v0/whoami', { key: privateKey, origin: `https://site-${i}.example.net` })
    expect(response.status).toBe(200)
    expect(response.headers.get('access-control-allow-origin')).toBe(`https://site-${i}.example.net`)
    await response.arrayBuffer()
  }
})

test('an event whose client hangs up while it waits long for an insert is not stored; those in inserts are', async () => {
  // An event store the test holds: every insert waits until released.
  const inserts: string[][] = []
  let release = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  const database = await testDatabase()
  const own = await testService({
    database,
    eventStore: async (rows) => {
      inserts.push(rows.map((row) => row.event_type))
      await held
    },
  })
  own.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
  try {
    const ownKey = (await seedKey(own, await seedBusiness(own))).key
    const post = (eventType: string, signal?: AbortSignal) =>
      fetch(`http://127.0.0.1:${own.app.server!.port}/api/v0/analytics`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ownKey}`, origin: ORIGIN, 'content-type': 'application/json' },
        body: JSON.stringify({ eventType }),
        signal,
      })
    // Fill every insert slot (two on PostgreSQL, one on PGlite), one request each.
    const slots = database.engine === 'postgres' ? POSTGRES_INSERTS_IN_FLIGHT : 1
    const inFlight: Promise<Response>[] = []
    for (let slot = 0; slot < slots; slot++) {
      inFlight.push(post(`in-insert-${slot}`))
      while (inserts.length === slot) await Bun.sleep(5)
    }
    const client = new AbortController()
    const gone = post('client-gone', client.signal).catch(() => 'hung up')
    const kept = post('still-waiting')
    // Both wait in the queue behind the held inserts; only then does one client hang up.
    const queued = () => Number(/^keygate_ingest_queue_rows (\d+)$/m.exec(own.metrics.render())?.[1] ?? 0)
    while (queued() < slots + 2) await Bun.sleep(5)
    client.abort()
    expect(await gone).toBe('hung up')
    // Past the group commit's checkClientAfterMs (250 ms): a wait of a few milliseconds is
    // written whether its client is there or not.
    await Bun.sleep(250)
    release()
    for (const response of await Promise.all(inFlight)) expect(response.status).toBe(202)
    expect((await kept).status).toBe(202)
    expect(inserts.flat().sort()).toEqual([...inFlight.map((_, slot) => `in-insert-${slot}`), 'still-waiting'].sort())
  } finally {
    await own.app.stop(true)
  }
})

test('a page view with a chunked body (no Content-Length) is read over the socket, and refused past 1 MiB', async () => {
  const chunked = (parts: string[]) =>
    fetch(`${base}/api/v0/analytics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'content-type': 'application/json' },
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of parts) controller.enqueue(new TextEncoder().encode(part))
          controller.close()
        },
      }),
    })
  const accepted = await chunked(['{"eventType":', '"chunked"}'])
  expect(accepted.status).toBe(202)
  const stored = await (await testEventsDatabase()).db
    .select({ eventType: analyticsEvents.eventType })
    .from(analyticsEvents)
    .where(eq(analyticsEvents.businessId, businessId))
  expect(stored).toEqual([{ eventType: 'chunked' }])
  const tooLarge = await chunked(['{"eventType":"big","properties":{"pad":"', 'x'.repeat(1024 * 1024), '"}}'])
  expect(tooLarge.status).toBe(413)
  expect(((await tooLarge.json()) as { error: { code: string } }).error.code).toBe('payload_too_large')
})

test('odd framings of a page view over the raw socket: a clear 400 (or 202 when well formed), never a 5xx', async () => {
  const port = service.app.server!.port!
  const head = `POST /api/v0/analytics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nOrigin: ${ORIGIN}\r\nContent-Type: application/json\r\nConnection: close\r\n`
  const cases: [string, string, number][] = [
    ['Content-Length: 0', `${head}Content-Length: 0\r\n\r\n`, 400],
    ['Content-Length: 00', `${head}Content-Length: 00\r\n\r\n`, 400],
    ['neither length nor chunks', `${head}\r\n`, 400],
    ['an empty chunked body', `${head}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    ['a chunked event', `${head}Transfer-Encoding: chunked\r\n\r\n16\r\n{"eventType":"chunky"}\r\n0\r\n\r\n`, 202],
    ['length and chunks', `${head}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    ['a body cut short', `${head}Content-Length: 3\r\n\r\n{"e`, 400],
    ['a signed length', `${head}Content-Length: +5\r\n\r\n{"a":`, 400],
    ['a length past 2^64', `${head}Content-Length: 99999999999999999999\r\n\r\n{}`, 400],
    ['a negative length', `${head}Content-Length: -1\r\n\r\n`, 400],
  ]
  for (const [name, request, status] of cases) {
    expect({ name, status: statusOf(await raw(port, request)) }).toEqual({ name, status })
  }
  const stored = await (await testEventsDatabase()).db
    .select({ eventType: analyticsEvents.eventType })
    .from(analyticsEvents)
    .where(eq(analyticsEvents.businessId, businessId))
  expect(stored).toEqual([{ eventType: 'chunky' }])
})
