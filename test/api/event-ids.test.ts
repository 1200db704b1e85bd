import { afterEach, describe, expect, test } from 'bun:test'
import { asc, eq, sql } from 'drizzle-orm'
import { analyticsEvents } from '../../db/schema/index.ts'
import { testEventsDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService, type Handles } from '../support/service.ts'

const ORIGIN = 'https://www.example.com'

/** Event ids (docs/api.md, "Events: ids and exactly-once"): a business stores an event id at most once. */
async function setup(name = 'Acme') {
  const service = await testService()
  const businessId = await seedBusiness(service, name)
  const writer = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'] })
  const reader = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
  return { service, businessId, pk: writer.key, sk: reader.key }
}

function track(service: Handles, key: string, body: unknown) {
  return call(service, '/api/v0/analytics', { method: 'POST', key, origin: ORIGIN, body })
}

async function stored(businessId?: string) {
  const { db } = await testEventsDatabase()
  const e = analyticsEvents
  return db
    .select()
    .from(e)
    .where(businessId === undefined ? undefined : eq(e.businessId, businessId))
    .orderBy(asc(e.occurredAt), asc(e.id))
}

describe('event ids', () => {
  afterEach(async () => {
    const { db } = await testEventsDatabase()
    await db.execute(sql`drop trigger if exists poison_events on analytics_events`)
    await db.execute(sql`drop function if exists poison_events()`)
  })

  test('the same id sent twice is stored once, and both answers are the same 202', async () => {
    const s = await setup()
    const id = crypto.randomUUID()
    const event = { id, eventType: 'signup', timestamp: '2026-03-01T10:00:00Z', properties: { plan: 'pro' } }
    const first = await track(s.service, s.pk, event)
    const second = await track(s.service, s.pk, { ...event, properties: { plan: 'changed' } })
    expect(first.status).toBe(202)
    expect(second.status).toBe(202)
    expect(await first.json()).toEqual({ accepted: 1 })
    expect(await second.json()).toEqual({ accepted: 1 })
    const rows = await stored()
    expect(rows).toHaveLength(1)
    // The first one stays: a retry changes nothing stored.
    expect(rows[0]).toMatchObject({ id, businessId: s.businessId, properties: { plan: 'pro' } })
  })

  test('a replayed batch answers as its first try; only the new ids are stored', async () => {
    const s = await setup()
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
    const first = await track(s.service, s.pk, { events: ids.map((id) => ({ id, eventType: 'page_view' })) })
    expect(await first.json()).toEqual({ accepted: 3 })
    const fresh = crypto.randomUUID()
    const replay = await track(s.service, s.pk, { events: [...ids, fresh].map((id) => ({ id, eventType: 'page_view' })) })
    expect(replay.status).toBe(202)
    expect(await replay.json()).toEqual({ accepted: 4 })
    expect((await stored()).map((row) => row.id).sort()).toEqual([...ids, fresh].sort())
  })

  test('the same id in 20 concurrent requests is stored once; every request is acknowledged', async () => {
    const s = await setup()
    const id = crypto.randomUUID()
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        track(s.service, s.pk, {
          events: [
            { id, eventType: 'page_view' },
            { eventType: 'page_view', properties: { n } },
          ],
        }),
      ),
    )
    for (const response of responses) {
      expect(response.status).toBe(202)
      expect(await response.json()).toEqual({ accepted: 2 })
    }
    const rows = await stored()
    expect(rows.filter((row) => row.id === id)).toHaveLength(1)
    // The events without id each got their own.
    expect(rows).toHaveLength(21)
  })

  test("through the group commit's retries (a poisoned request in the batch) an id is still stored once", async () => {
    // As in test/api/ingest-isolation.test.ts: the database refuses event type "poison",
    // so a batch holding one fails and each of its requests is inserted again alone.
    const { db } = await testEventsDatabase()
    await db.execute(sql`create function poison_events() returns trigger language plpgsql as $$
      begin raise exception 'poisoned row'; end $$`)
    await db.execute(sql`create trigger poison_events before insert on analytics_events
      for each row when (new.event_type = 'poison') execute function poison_events()`)
    // The id travels with its timestamp, as the snippet sends it: every try reaches the
    // insert (and the trigger). An id without one is claimed once, and the later tries of
    // it never reach the insert at all (docs/decisions.md, "Exactly once across partitions").
    const s = await setup()
    const id = crypto.randomUUID()
    const timestamp = new Date().toISOString()
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        track(s.service, s.pk, { events: [{ id, timestamp, eventType: n % 3 === 0 ? 'poison' : 'page_view' }, { eventType: 'click' }] }),
      ),
    )
    for (const [n, answer] of answers.entries()) {
      expect(answer.status).toBe(n % 3 === 0 ? 500 : 202)
      if (n % 3 !== 0) expect(await answer.json()).toEqual({ accepted: 2 })
    }
    const rows = await stored()
    expect(rows.filter((row) => row.id === id)).toHaveLength(1)
    expect(rows.filter((row) => row.eventType === 'click')).toHaveLength(20)
  })

  test('a duplicate id within one batch is stored once and counted twice', async () => {
    const s = await setup()
    const id = crypto.randomUUID()
    const response = await track(s.service, s.pk, {
      events: [
        { id, eventType: 'page_view', url: 'https://www.example.com/a' },
        { eventType: 'click' },
        { id, eventType: 'page_view', url: 'https://www.example.com/b' },
      ],
    })
    expect(response.status).toBe(202)
    expect(await response.json()).toEqual({ accepted: 3 })
    const rows = await stored()
    expect(rows).toHaveLength(2)
    expect(rows.filter((row) => row.id === id)).toHaveLength(1)
  })

  test('another business stores the same id on its own', async () => {
    const a = await setup('A')
    const b = await setup('B')
    const id = crypto.randomUUID()
    expect((await track(a.service, a.pk, { id, eventType: 'page_view' })).status).toBe(202)
    expect((await track(b.service, b.pk, { id, eventType: 'page_view' })).status).toBe(202)
    expect((await stored(a.businessId)).map((row) => row.id)).toEqual([id])
    expect((await stored(b.businessId)).map((row) => row.id)).toEqual([id])
  })

  test('an id sent without timestamp and retried later is stored once, with the first receive time', async () => {
    const s = await setup()
    const id = crypto.randomUUID()
    expect((await track(s.service, s.pk, { id, eventType: 'page_view' })).status).toBe(202)
    const [first] = await stored()
    // The retry's receive time, so its occurredAt, is another one.
    await Bun.sleep(5)
    const retry = await track(s.service, s.pk, { id: id.toUpperCase(), eventType: 'page_view' })
    expect(retry.status).toBe(202)
    expect(await retry.json()).toEqual({ accepted: 1 })
    const rows = await stored()
    expect(rows).toHaveLength(1)
    expect(rows[0]!.occurredAt.getTime()).toBe(first!.occurredAt.getTime())
  })

  test('the same id with two different timestamps is two events: each stored once', async () => {
    // A partitioned table's keys hold the event's time: the id is unique per timestamp. The
    // snippet and the backend client resend an event with the timestamp it was made with.
    const s = await setup()
    const id = crypto.randomUUID()
    const now = Date.now()
    const at = (minute: number) => new Date(now - minute * 60_000).toISOString()
    for (const timestamp of [at(10), at(5), at(10), at(5)]) {
      expect((await track(s.service, s.pk, { id, timestamp, eventType: 'page_view' })).status).toBe(202)
    }
    const rows = await stored()
    expect(rows.map((row) => [row.id, row.occurredAt.toISOString()])).toEqual([
      [id, at(10)],
      [id, at(5)],
    ])
  })

  test('an id without timestamp is recognized in a batch large enough for COPY, and in one sent concurrently', async () => {
    const s = await setup()
    const events = Array.from({ length: 100 }, () => ({ id: crypto.randomUUID(), eventType: 'page_view' }))
    expect((await track(s.service, s.pk, { events })).status).toBe(202)
    await Bun.sleep(5)
    const retries = await Promise.all([track(s.service, s.pk, { events }), track(s.service, s.pk, { events: events.slice(0, 70) })])
    expect(retries.map((r) => r.status)).toEqual([202, 202])
    expect(await stored()).toHaveLength(100)
  })

  test('an id that is not a UUID is a 400 naming the field, and nothing of the request is stored', async () => {
    const s = await setup()
    for (const body of [
      { id: 'not-a-uuid', eventType: 'page_view' },
      {
        events: [
          { id: crypto.randomUUID(), eventType: 'page_view' },
          { id: 42, eventType: 'page_view' },
        ],
      },
      { events: [{ eventType: 'page_view' }, { id: `{${crypto.randomUUID()}}`, eventType: 'page_view' }] },
    ]) {
      const response = await track(s.service, s.pk, body)
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toContain(`Invalid body field "${'events' in body ? 'events[1].id' : 'id'}": must be a UUID`)
    }
    expect(await stored()).toHaveLength(0)
  })

  test('reading events shows the sender id, and a service id for events sent without one', async () => {
    const s = await setup()
    const id = crypto.randomUUID()
    const response = await track(s.service, s.pk, {
      events: [
        { id, eventType: 'signup', timestamp: '2026-03-01T10:00:00Z' },
        { eventType: 'page_view', timestamp: '2026-03-01T09:00:00Z' },
      ],
    })
    expect(response.status).toBe(202)
    const page = (await (await call(s.service, '/api/v0/analytics', { key: s.sk })).json()) as { data: { id: string; eventType: string }[] }
    const rows = await stored()
    expect(page.data.map((event) => [event.eventType, event.id])).toEqual([
      ['signup', id],
      ['page_view', rows.find((row) => row.eventType === 'page_view')!.id],
    ])
    expect(page.data[1]!.id).not.toBe(id)
  })
})

test('the API reference describes an event id as a UUID of the sender', async () => {
  const service = await testService()
  const document = (await (await call(service, '/openapi')).json()) as {
    paths: Record<string, { post?: { requestBody: { content: Record<string, { schema: unknown }> } } }>
  }
  const body = JSON.stringify(document.paths['/api/v0/analytics']!.post!.requestBody)
  expect(body).toContain('"id":{"pattern":"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"')
  expect(body).toContain('Your UUID for this event')
})
