import { describe, expect, test } from 'bun:test'
import { asc, eq, sql } from 'drizzle-orm'
import fc from 'fast-check'
import { queryRows } from '../../db/client.ts'
import { analyticsEvents } from '../../db/schema/index.ts'
import { COPY_MIN_ROWS, type EventRow, eventInserter, eventWriter } from '../../src/events/write.ts'
import { testEventsDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'
import { eventRow } from '../support/event-row.ts'

const ORIGIN = 'https://www.example.com'

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const writer = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'] })
  const reader = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
  return { service, businessId, pk: writer.key, pkId: writer.record.id, sk: reader.key }
}

async function storedEvents() {
  const { db } = await testEventsDatabase()
  return db.select().from(analyticsEvents).orderBy(asc(analyticsEvents.occurredAt), asc(analyticsEvents.eventType))
}

async function countEvents(): Promise<number> {
  const [row] = await queryRows<{ n: number }>((await testEventsDatabase()).db, sql`select count(*)::int as n from analytics_events`)
  return row!.n
}

type Setup = Awaited<ReturnType<typeof setup>>

function track(s: Setup, body: unknown, options: { key?: string | null; origin?: string } = {}) {
  return call(s.service, '/api/v0/analytics', {
    method: 'POST',
    key: options.key === undefined ? s.pk : options.key,
    origin: options.origin ?? ORIGIN,
    body,
  })
}

function read(s: Setup, query = '', key: string | null = s.sk) {
  return call(s.service, `/api/v0/analytics${query}`, { key })
}

describe('POST /api/v0/analytics', () => {
  test('stores one event with its key, origin and receive time, and answers only the count', async () => {
    const s = await setup()
    const before = Date.now()
    const response = await track(s, {
      eventType: 'page_view',
      url: 'https://www.example.com/pricing',
      referrer: 'https://search.example/',
      anonymousId: 'anon-1',
      personId: 'user-7',
      properties: { plan: 'pro', nested: { depth: [1, 2] } },
      timestamp: '2026-01-31T12:00:00.250+01:00',
    })
    expect(response.status).toBe(202)
    expect(await response.json()).toEqual({ accepted: 1 })
    const [event, ...rest] = await storedEvents()
    expect(rest).toHaveLength(0)
    expect(event).toMatchObject({
      businessId: s.businessId,
      keyId: s.pkId,
      origin: ORIGIN,
      eventType: 'page_view',
      url: 'https://www.example.com/pricing',
      referrer: 'https://search.example/',
      anonymousId: 'anon-1',
      personId: 'user-7',
      properties: { plan: 'pro', nested: { depth: [1, 2] } },
    })
    expect(event!.occurredAt.toISOString()).toBe('2026-01-31T11:00:00.250Z')
    expect(event!.receivedAt.getTime()).toBeGreaterThanOrEqual(before - 1)
    expect(event!.receivedAt.getTime()).toBeLessThanOrEqual(Date.now() + 1)
  })

  test('an event without a timestamp occurred when it was received; empty url and referrer are stored as null', async () => {
    const s = await setup()
    expect((await track(s, { eventType: 'signup', url: '', referrer: '' })).status).toBe(202)
    const [event] = await storedEvents()
    expect(event!.occurredAt.getTime()).toBe(event!.receivedAt.getTime())
    expect(event).toMatchObject({ url: null, referrer: null, anonymousId: null, personId: null, properties: {} })
  })

  test('stores a batch of 500 events whole', async () => {
    const s = await setup()
    const events = Array.from({ length: 500 }, (_, i) => ({ eventType: `step.${i % 7}`, properties: { i } }))
    const response = await track(s, { events })
    expect(response.status).toBe(202)
    expect(await response.json()).toEqual({ accepted: 500 })
    expect(await countEvents()).toBe(500)
  })

  test('a private key may track from a server: the origin is stored as null', async () => {
    const s = await setup()
    const { key, record } = await seedKey(s.service, s.businessId, { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const response = await call(s.service, '/api/v0/analytics', { key, body: { eventType: 'order:paid' } })
    expect(response.status).toBe(202)
    expect(await storedEvents()).toMatchObject([{ keyId: record.id, origin: null, eventType: 'order:paid' }])
  })

  test('without a key: 401 missing_api_key, nothing stored', async () => {
    const s = await setup()
    const response = await track(s, { eventType: 'page_view' }, { key: null })
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('missing_api_key')
    expect(await countEvents()).toBe(0)
  })

  test('a public key from an origin it does not allow: 403 origin_not_allowed, nothing stored', async () => {
    const s = await setup()
    const response = await track(s, { eventType: 'page_view' }, { origin: 'https://evil.example.org' })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('origin_not_allowed')
    expect(await countEvents()).toBe(0)
  })

  test('a key without ANALYTICS_WRITE: 403 insufficient_scope, nothing stored', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { scopes: ['AUDIENCE_PERSON_WRITE'] })
    const response = await track(s, { eventType: 'page_view' }, { key })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
    expect(await countEvents()).toBe(0)
  })

  test('an invalid event anywhere in a batch refuses the whole batch, naming the field', async () => {
    const s = await setup()
    const events = [{ eventType: 'a' }, { eventType: 'b' }, { eventType: 'c' }, { eventType: 'page view' }, { eventType: 'e' }]
    const response = await track(s, { events })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toBe(
      'Invalid body field "events[3].eventType": must be 1-64 characters of letters, digits, "_", ".", ":" or "-", like "page_view".',
    )
    expect(await countEvents()).toBe(0)
  })

  test('a single event with a bad field names the field without a batch prefix', async () => {
    const s = await setup()
    const response = await track(s, { eventType: 'x'.repeat(65) })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid body field "eventType": ')
    expect(await countEvents()).toBe(0)
  })

  test('a body with neither eventType nor events is refused', async () => {
    const s = await setup()
    const response = await track(s, { url: 'https://www.example.com/' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid body field "eventType": ')
    expect(await countEvents()).toBe(0)
  })

  test('more than 500 events, or none, are refused', async () => {
    const s = await setup()
    const tooMany = await track(s, { events: Array.from({ length: 501 }, () => ({ eventType: 'x' })) })
    expect(tooMany.status).toBe(400)
    expect((await errorOf(tooMany)).message).toStartWith('Invalid body field "events": ')
    const none = await track(s, { events: [] })
    expect(none.status).toBe(400)
    expect((await errorOf(none)).message).toStartWith('Invalid body field "events": ')
    expect(await countEvents()).toBe(0)
  })

  test.each([
    ['url', { url: 'https://www.example.com/' + 'a'.repeat(2048) }],
    ['referrer', { referrer: 'r'.repeat(2049) }],
    ['anonymousId', { anonymousId: 'a'.repeat(201) }],
    ['personId', { personId: '' }],
    ['properties', { properties: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }],
    ['properties', { properties: ['not', 'an', 'object'] }],
    ['timestamp', { timestamp: '2026-01-31' }],
  ])('a bad %s in a batch refuses the batch', async (field, bad) => {
    const s = await setup()
    const response = await track(s, { events: [{ eventType: 'ok' }, { eventType: 'bad', ...bad }] })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith(`Invalid body field "events[1].${field}": `)
    expect(await countEvents()).toBe(0)
  })

  test('a timestamp more than 24 hours ahead is refused, and nothing of the batch is stored', async () => {
    const s = await setup()
    const ahead = new Date(Date.now() + 25 * 3600_000).toISOString()
    const response = await track(s, { events: [{ eventType: 'ok' }, { eventType: 'late', timestamp: ahead }] })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith(
      `Invalid body field "events[1].timestamp": ${ahead} is outside the accepted range`,
    )
    expect(await countEvents()).toBe(0)
  })

  test('a timestamp before 2000 is refused; one a few hours ahead is accepted', async () => {
    const s = await setup()
    const old = await track(s, { eventType: 'ok', timestamp: '1999-12-31T23:59:59Z' })
    expect(old.status).toBe(400)
    expect((await errorOf(old)).message).toStartWith('Invalid body field "timestamp": ')
    const soon = await track(s, { eventType: 'ok', timestamp: new Date(Date.now() + 3 * 3600_000).toISOString() })
    expect(soon.status).toBe(202)
    expect(await countEvents()).toBe(1)
  })

  test('an impossible date is refused rather than rolled over', async () => {
    const s = await setup()
    const response = await track(s, { eventType: 'ok', timestamp: '2026-02-30T10:00:00Z' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toBe(
      'Invalid body field "timestamp": 2026-02-30T10:00:00Z is not a real date-time; use an ISO-8601 date-time like "2026-01-31T12:00:00Z".',
    )
    expect(await countEvents()).toBe(0)
  })

  test('a U+0000 anywhere in an event is refused with its path (PostgreSQL cannot store it)', async () => {
    const s = await setup()
    const response = await track(s, { events: [{ eventType: 'ok', properties: { cart: { items: ['a', 'b\u0000'] } } }] })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid body field "events[0].properties.cart.items[1]": ')
    expect(await countEvents()).toBe(0)
  })

  test('properties nested deeper than 8 levels are refused', async () => {
    const s = await setup()
    let deep: Record<string, unknown> = { end: true }
    for (let i = 0; i < 9; i++) deep = { d: deep }
    const response = await track(s, { eventType: 'ok', properties: deep })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('nested more than 8 levels')
    expect(await countEvents()).toBe(0)
  })

  test('50 concurrent requests all answer 202 and every event is stored', async () => {
    const s = await setup()
    const sizes = Array.from({ length: 50 }, (_, i) => 1 + (i % 5))
    const responses = await Promise.all(
      sizes.map((size, i) => track(s, { events: Array.from({ length: size }, (_, j) => ({ eventType: 'burst', properties: { i, j } })) })),
    )
    expect(responses.map((r) => r.status)).toEqual(sizes.map(() => 202))
    expect(await Promise.all(responses.map((r) => r.json()))).toEqual(sizes.map((size) => ({ accepted: size })))
    expect(await countEvents()).toBe(sizes.reduce((a, b) => a + b, 0))
  })

  test('concurrent requests share transactions (group commit)', async () => {
    const s = await setup()
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => track(s, { eventType: 'burst', properties: { i } })))
    expect(responses.every((r) => r.status === 202)).toBe(true)
    // Rows written by one transaction carry its id in xmin; fewer transactions than requests
    // means requests were committed together.
    const [row] = await queryRows<{ transactions: number; events: number }>(
      (await testEventsDatabase()).db,
      sql`select count(distinct xmin::text)::int as transactions, count(*)::int as events from analytics_events`,
    )
    expect(row!.events).toBe(50)
    expect(row!.transactions).toBeLessThan(50)
    expect(row!.transactions).toBeGreaterThanOrEqual(1)
  })

  test('draining the service commits the events of requests still waiting for the writer', async () => {
    // The table's writer, held until the test lets it go: the ten requests are surely
    // waiting in the queue when drain() begins.
    const { db } = await testEventsDatabase()
    const write = eventWriter(db)
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const service = await testService({
      eventStore: async (rows) => {
        await held
        await write(rows)
      },
    })
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'] })
    const pending = Array.from({ length: 10 }, (_, i) =>
      call(service, '/api/v0/analytics', { key, origin: ORIGIN, body: { eventType: 'late', properties: { i } } }),
    )
    const queued = () => Number(/^keygate_ingest_queue_rows (\d+)$/m.exec(service.metrics.render())?.[1] ?? 0)
    while (queued() < 10) await Bun.sleep(5)
    const drained = service.drain()
    release()
    await drained
    // What drain() leaves is what a database closed right after it would hold.
    expect(await countEvents()).toBe(10)
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual(Array(10).fill(202))
  })

  test('after the service drained, tracking answers 503 unavailable and stores nothing', async () => {
    const s = await setup()
    await s.service.drain()
    const response = await track(s, { eventType: 'too_late' })
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect((await errorOf(response)).code).toBe('unavailable')
    expect(await countEvents()).toBe(0)
  })
})

describe('GET /api/v0/analytics', () => {
  async function seedEvents(s: Setup) {
    const events = [
      { eventType: 'page_view', timestamp: '2026-03-01T10:00:00Z', url: 'https://www.example.com/a' },
      { eventType: 'signup', timestamp: '2026-03-01T11:00:00Z' },
      { eventType: 'page_view', timestamp: '2026-03-01T12:00:00Z', url: 'https://www.example.com/b' },
      { eventType: 'page_view', timestamp: '2026-03-01T13:00:00Z', url: 'https://www.example.com/c' },
      { eventType: 'purchase', timestamp: '2026-03-01T14:00:00Z', properties: { amount: 42 } },
    ]
    expect((await track(s, { events })).status).toBe(202)
  }

  test('lists events newest first with every stored field', async () => {
    const s = await setup()
    await seedEvents(s)
    const response = await read(s)
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.nextCursor).toBeNull()
    expect(body.data.map((e: { timestamp: string }) => e.timestamp)).toEqual([
      '2026-03-01T14:00:00.000Z',
      '2026-03-01T13:00:00.000Z',
      '2026-03-01T12:00:00.000Z',
      '2026-03-01T11:00:00.000Z',
      '2026-03-01T10:00:00.000Z',
    ])
    expect(Object.keys(body.data[0]).sort()).toEqual(
      ['anonymousId', 'eventType', 'id', 'keyId', 'origin', 'personId', 'properties', 'receivedAt', 'referrer', 'timestamp', 'url'].sort(),
    )
    expect(body.data[0]).toMatchObject({ eventType: 'purchase', properties: { amount: 42 }, keyId: s.pkId, origin: ORIGIN })
  })

  test('filters by type and by time range (from inclusive, to exclusive)', async () => {
    const s = await setup()
    await seedEvents(s)
    const byType = await (await read(s, '?type=page_view')).json()
    expect(byType.data.map((e: { url: string }) => e.url)).toEqual([
      'https://www.example.com/c',
      'https://www.example.com/b',
      'https://www.example.com/a',
    ])
    const byTime = await (await read(s, '?from=2026-03-01T11:00:00Z&to=2026-03-01T13:00:00Z')).json()
    expect(byTime.data.map((e: { eventType: string }) => e.eventType)).toEqual(['page_view', 'signup'])
  })

  test('pages through every event with the cursor, without repeats', async () => {
    const s = await setup()
    await seedEvents(s)
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = `?limit=2${cursor ? `&cursor=${cursor}` : ''}`
      const page = (await (await read(s, query)).json()) as { data: { id: string }[]; nextCursor: string | null }
      seen.push(...page.data.map((e) => e.id))
      cursor = page.nextCursor
      pages++
    } while (cursor !== null && pages < 10)
    expect(pages).toBe(3)
    expect(new Set(seen).size).toBe(5)
  })

  test('pages keep events that share a timestamp apart by id', async () => {
    const s = await setup()
    const timestamp = '2026-03-02T00:00:00Z'
    await track(s, { events: Array.from({ length: 7 }, (_, i) => ({ eventType: 'same', timestamp, properties: { i } })) })
    const first = await (await read(s, '?limit=4')).json()
    const second = await (await read(s, `?limit=4&cursor=${first.nextCursor}`)).json()
    expect(second.nextCursor).toBeNull()
    const ids = [...first.data, ...second.data].map((e: { id: string }) => e.id)
    expect(new Set(ids).size).toBe(7)
  })

  test("another business's events are not listed", async () => {
    const s = await setup()
    await seedEvents(s)
    const other = await seedBusiness(s.service, 'Other')
    const { key } = await seedKey(s.service, other, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const response = await read(s, '', key)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ data: [], nextCursor: null })
  })

  test('a public key: 403 public_key_not_allowed', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/analytics', { key: s.pk, origin: ORIGIN })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('public_key_not_allowed')
  })

  test('a private key without ANALYTICS_READ: 403 insufficient_scope', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const response = await read(s, '', key)
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
  })

  test('without a key: 401', async () => {
    const s = await setup()
    const response = await read(s, '', null)
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('missing_api_key')
  })

  test.each([
    ['?limit=0', 'Invalid query field "limit": must be a whole number from 1 to 1000.'],
    ['?limit=1001', 'Invalid query field "limit": must be a whole number from 1 to 1000.'],
    ['?limit=ten', 'Invalid query field "limit": must be a whole number from 1 to 1000.'],
    ['?from=yesterday', 'Invalid query field "from": must be an ISO-8601 date-time with a time zone, like "2026-01-31T12:00:00Z".'],
    [
      '?type=page%20view',
      'Invalid query field "type": must be 1-64 characters of letters, digits, "_", ".", ":" or "-", like "page_view".',
    ],
  ])('%s answers 400 naming the field', async (query, message) => {
    const s = await setup()
    const response = await read(s, query)
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toMatchObject({ code: 'invalid_request', message })
  })

  test('a range whose end is not after its start is refused', async () => {
    const s = await setup()
    const response = await read(s, '?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z')
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid query field "to": must be later than "from"')
  })

  test('a cursor this API did not give out is refused', async () => {
    const s = await setup()
    const forged = Buffer.from(JSON.stringify(['2026-03-01T00:00:00Z', "1' or '1'='1"])).toString('base64url')
    for (const cursor of ['abc', forged]) {
      const response = await read(s, `?cursor=${cursor}`)
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toStartWith('Invalid query field "cursor": ')
    }
  })
})

test('an eventStore given to the app receives the accepted events instead of the table (the benches rely on it)', async () => {
  const stored: { event_type: string; business_id: string }[][] = []
  const service = await testService({
    eventStore: async (rows) => void stored.push(rows.map((r) => ({ event_type: r.event_type, business_id: r.business_id }))),
  })
  const businessId = await seedBusiness(service)
  const { key } = await seedKey(service, businessId)
  const response = await call(service, '/api/v0/analytics', { key, origin: 'https://www.example.com', body: { eventType: 'elsewhere' } })
  expect(response.status).toBe(202)
  expect(stored).toEqual([[{ event_type: 'elsewhere', business_id: businessId }]])
  const { db } = await testEventsDatabase()
  expect(await db.select().from(analyticsEvents)).toEqual([])
})

test('one insert of rows from two businesses, keys and Origins, interleaved, stores every row exactly as given', async () => {
  // Rows of consecutive requests share one insert, grouped by business, key and Origin
  // (insertParameter): each field must still land on its own row.
  const service = await testService()
  const [first, second] = [await seedBusiness(service), await seedBusiness(service)]
  const [a, b] = [(await seedKey(service, first)).record.id, (await seedKey(service, second)).record.id]
  const at = (second: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, second)).toISOString()
  const row = (business: string, key: string, origin: string | null, received: string, more: Partial<EventRow> = {}): EventRow => ({
    id: Bun.randomUUIDv7(),
    business_id: business,
    key_id: key,
    origin,
    event_type: 'page_view',
    url: null,
    referrer: null,
    anonymous_id: null,
    person_id: null,
    properties: {},
    occurred_at: received,
    received_at: received,
    untimed: false,
    ...more,
  })
  const rows = [
    row(first, a, 'https://a.example', at(1), { url: 'https://a.example/1', properties: { plan: 'pro', nested: { n: 1 } } }),
    // Same key and Origin, received later, happened earlier: its own times.
    row(first, a, 'https://a.example', at(2), { occurred_at: at(0), anonymous_id: '', person_id: 'p-1' }),
    row(second, b, null, at(2), { event_type: 'signup', referrer: 'https://r.example/' }),
    row(first, a, 'https://other.example', at(2), { properties: { emoji: '😀', quote: '"\\' } }),
    row(first, a, 'https://a.example', at(3)),
  ]
  const { db } = await testEventsDatabase()
  await eventInserter(db)(rows)
  const stored = await db.select().from(analyticsEvents)
  const byId = (x: { id: string }, y: { id: string }) => x.id.localeCompare(y.id)
  expect(stored.sort(byId)).toEqual(rows.map(asStored).sort(byId))
})

function asStored(r: EventRow) {
  return {
    id: r.id,
    businessId: r.business_id,
    keyId: r.key_id,
    origin: r.origin,
    eventType: r.event_type,
    url: r.url,
    referrer: r.referrer,
    anonymousId: r.anonymous_id,
    personId: r.person_id,
    properties: r.properties,
    occurredAt: new Date(r.occurred_at),
    receivedAt: new Date(r.received_at),
  }
}

/**
 * The writer the service runs: by COPY on PostgreSQL (from COPY_MIN_ROWS rows), by the
 * insert on PGlite. `copyFailures` counts COPYs that failed and went to the insert: the
 * insert would hide a COPY that mangles text, since it stores the batch right anyway.
 */
async function serviceWriter() {
  const database = await testEventsDatabase()
  const copyIn = database.copyIn
  let copyFailures = 0
  const counted =
    copyIn &&
    (async (statement: string, text: string) => {
      try {
        await copyIn(statement, text)
      } catch (error) {
        copyFailures++
        throw error
      }
    })
  return { db: database.db, write: eventWriter(database.db, counted), copyFailures: () => copyFailures }
}

describe("the service's event writer", () => {
  async function keyOf() {
    const service = await testService()
    const businessId = await seedBusiness(service)
    return { businessId, keyId: (await seedKey(service, businessId)).record.id }
  }

  const rowOf = (businessId: string, keyId: string, more: Partial<EventRow> = {}): EventRow =>
    eventRow({ business_id: businessId, key_id: keyId, ...more })

  /** `rows` and plain events after them up to COPY_MIN_ROWS: a batch that goes by COPY on PostgreSQL. */
  const copyBatch = (businessId: string, keyId: string, rows: EventRow[]): EventRow[] => [
    ...rows,
    ...Array.from({ length: Math.max(0, COPY_MIN_ROWS - rows.length) }, () => rowOf(businessId, keyId)),
  ]

  test('stores any text a body may hold exactly as sent: tabs, newlines, backslashes and quotes are data, not COPY syntax', async () => {
    const { businessId, keyId } = await keyOf()
    const { db, write, copyFailures } = await serviceWriter()
    // Whatever the body screen lets through: no NUL, no lone surrogate (src/http/json-body.ts).
    const text = fc
      .array(
        fc.oneof(fc.constantFrom('\t', '\n', '\r', '\\', '\\N', '\\.', '"', "'", '\u2028', '😀', ' '), fc.string({ unit: 'grapheme' })),
        {
          maxLength: 8,
        },
      )
      .map((parts) => parts.join('').replaceAll('\u0000', ''))
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(text, text, fc.option(text, { nil: null })), { minLength: 1, maxLength: 6 }), async (values) => {
        const rows = copyBatch(
          businessId,
          keyId,
          values.map(([url, anonymous, referrer]) =>
            rowOf(businessId, keyId, {
              url,
              anonymous_id: anonymous,
              referrer,
              properties: { [anonymous || 'k']: url, list: [referrer] },
            }),
          ),
        )
        await write(rows)
        const stored = await db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, businessId))
        const byId = new Map(stored.map((row) => [row.id, row]))
        for (const row of rows) expect(byId.get(row.id)).toEqual(asStored(row))
        // Fresh ids: on PostgreSQL every one of these batches went by COPY itself.
        expect(copyFailures()).toBe(0)
      }),
      { numRuns: 40 },
    )
  })

  test('a batch holding ids already stored, and one id twice, stores every other event once and none twice', async () => {
    const { businessId, keyId } = await keyOf()
    const { db, write } = await serviceWriter()
    const stored = rowOf(businessId, keyId, { event_type: 'first' })
    const first = copyBatch(businessId, keyId, [stored])
    await write(first)
    const twice = rowOf(businessId, keyId, { event_type: 'twice' })
    // A replay of the stored event with other fields: the first stored version stays.
    const second = copyBatch(businessId, keyId, [{ ...stored, event_type: 'replayed' }, twice, twice])
    const fresh = second.slice(3)
    await write(second)
    const rows = await db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, businessId))
    expect(rows.length).toBe(first.length + 1 + fresh.length)
    expect(rows.find((r) => r.id === stored.id)!.eventType).toBe('first')
    expect(rows.filter((r) => r.id === twice.id).length).toBe(1)
    for (const row of fresh) expect(rows.some((r) => r.id === row.id)).toBe(true)
  })

  test('two batches with the same ids written at once: each id stored once', async () => {
    const { businessId, keyId } = await keyOf()
    const { db, write } = await serviceWriter()
    const shared = Array.from({ length: COPY_MIN_ROWS + 20 }, () => rowOf(businessId, keyId))
    // Opposite orders, as two retries grouped differently would send them.
    await Promise.all([write(shared), write([...shared].reverse()), write(shared.slice(5, 5 + COPY_MIN_ROWS))])
    const rows = await db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, businessId))
    expect(rows.map((r) => r.id).sort()).toEqual(shared.map((r) => r.id).sort())
  })

  // PostgreSQL only: PGlite offers no COPY here, and its writer is the insert the tests above check.
  test.skipIf(!process.env.DATABASE_URL)('on PostgreSQL a batch of COPY_MIN_ROWS goes by COPY, a smaller one by the insert', async () => {
    const { businessId, keyId } = await keyOf()
    const database = await testEventsDatabase()
    const statements: string[] = []
    const write = eventWriter(database.db, async (statement, text) => {
      statements.push(statement)
      await database.copyIn!(statement, text)
    })
    await write(copyBatch(businessId, keyId, []))
    expect(statements).toEqual([expect.stringMatching(/^copy analytics_events \(id, /)])
    await write(Array.from({ length: COPY_MIN_ROWS - 1 }, () => rowOf(businessId, keyId)))
    expect(statements.length).toBe(1)
    expect(await database.db.$count(analyticsEvents, eq(analyticsEvents.businessId, businessId))).toBe(2 * COPY_MIN_ROWS - 1)
  })
})
