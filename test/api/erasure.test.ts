import { describe, expect, test } from 'bun:test'
import { and, eq, sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { DEFAULT_EVENT_RETENTION_DAYS } from '../../src/config.ts'
import { maintainEvents } from '../../src/events/maintenance.ts'
import { analyticsErasures, analyticsEvents, auditEntries, webhookEvents } from '../../db/schema/index.ts'
import { testDatabase, testEventsDatabase } from '../support/database.ts'
import { watchEventDeletes } from '../support/delete-statements.ts'
import { loopback, type Loopback } from '../support/loopback.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'

// A person's events hidden from the 202 on, deleted in the
// background in every span of time, counted, audited without the identifier; other
// businesses' events and later events kept.

const DAY = 86_400_000
const ORIGIN = 'https://www.example.com'
// Identifiers distinctive enough that finding them anywhere in the trail would be no accident.
const PERSON = 'person-7f3a-erase-me'
const VISITOR = 'anon-91c2-erase-me'

async function setup(options: Parameters<typeof testService>[0] = {}) {
  const service = await testService({ eventRetentionDays: 400, ...options })
  const businessId = await seedBusiness(service)
  const owner = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ', 'ANALYTICS_WRITE'] })
  const pk = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'] })
  const otherBusiness = await seedBusiness(service, 'Other')
  const otherKey = await seedKey(service, otherBusiness, { type: 'private', scopes: ['ANALYTICS_READ', 'ANALYTICS_WRITE'] })
  return {
    service,
    businessId,
    sk: owner.key,
    keyId: owner.record.id,
    pk: pk.key,
    otherBusiness,
    otherSk: otherKey.key,
    http: loopback(service),
  }
}

type Setup = Awaited<ReturnType<typeof setup>>

/**
 * The same events in both businesses, with the same ids: the person's and the visitor's across
 * 300 days (several spans of the worker and, with time partitions, several partitions), and
 * two of someone else's. Stored as accepted earlier (received when they occurred).
 */
async function storeHistory(s: Setup): Promise<number> {
  const { db } = await testEventsDatabase()
  const now = Date.now()
  const history = [
    { personId: PERSON, days: 300 },
    { personId: PERSON, days: 40 },
    { personId: PERSON, days: 1 },
    { anonymousId: VISITOR, days: 100 },
    { anonymousId: VISITOR, personId: 'someone-else', days: 2 },
    { personId: 'someone-else', days: 3 },
    { anonymousId: 'another-visitor', days: 50 },
  ].map((event, index) => ({ ...event, id: crypto.randomUUID(), eventType: `e${index}` }))
  for (const [businessId, keyId] of [
    [s.businessId, s.keyId],
    [s.otherBusiness, s.keyId],
  ] as const) {
    await db.insert(analyticsEvents).values(
      history.map(({ days, ...event }) => ({
        ...event,
        businessId,
        keyId,
        occurredAt: new Date(now - days * DAY),
        receivedAt: new Date(now - days * DAY),
      })),
    )
  }
  return 5 // the person's three and the visitor's two
}

async function listed(http: Loopback, key: string): Promise<{ eventType: string; personId: string | null; anonymousId: string | null }[]> {
  const response = await http.api('/analytics?limit=1000', key)
  expect(response.status).toBe(200)
  return ((await response.json()) as { data: { eventType: string; personId: string | null; anonymousId: string | null }[] }).data
}

async function storedCount(businessId: string): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    (await testEventsDatabase()).db,
    sql`select count(*)::int as n from analytics_events where business_id = ${businessId}`,
  )
  return row!.n
}

interface ErasureAnswer {
  id: string
  status: 'pending' | 'done'
  requestedAt: string
  completedAt: string | null
  deleted: number
}

async function untilDone(read: () => Promise<Response>): Promise<ErasureAnswer> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const response = await read()
    expect(response.status).toBe(200)
    const erasure = (await response.json()) as ErasureAnswer
    if (erasure.status === 'done' || Date.now() > deadline) return erasure
    await Bun.sleep(50)
  }
}

describe('POST /api/v0/analytics/erasures', () => {
  test("hides the person's events at once, deletes them in the background, counts them; later events and other businesses are kept", async () => {
    const s = await setup()
    const erased = await storeHistory(s)
    expect(await listed(s.http, s.sk)).toHaveLength(7)

    const created = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON, anonymousId: VISITOR } })
    expect(created.status).toBe(202)
    const answer = (await created.json()) as { id: string; status: string }
    expect(answer).toEqual({ id: expect.any(String), status: 'pending' })

    // From the 202 on, whether or not the worker got to them yet.
    expect((await listed(s.http, s.sk)).map((e) => e.eventType).sort()).toEqual(['e5', 'e6'])
    // An event of the person tracked after the request is kept.
    await Bun.sleep(5)
    const later = await s.http.api('/analytics', s.pk, { body: { eventType: 'after', personId: PERSON }, origin: ORIGIN })
    expect(later.status).toBe(202)

    const done = await untilDone(() => s.http.api(`/analytics/erasures/${answer.id}`, s.sk))
    expect(done).toMatchObject({ id: answer.id, status: 'done', deleted: erased })
    expect(Date.parse(done.completedAt!)).toBeGreaterThanOrEqual(Date.parse(done.requestedAt))
    expect((await listed(s.http, s.sk)).map((e) => e.eventType).sort()).toEqual(['after', 'e5', 'e6'])
    expect(await storedCount(s.businessId)).toBe(3)
    // The other business's events with the same ids and the same person: all there.
    expect(await storedCount(s.otherBusiness)).toBe(7)
    expect(await listed(s.http, s.otherSk)).toHaveLength(7)

    // The finished request keeps no identifier; the trail has the count, never the identifier.
    const [row] = await (await testEventsDatabase()).db.select().from(analyticsErasures).where(eq(analyticsErasures.id, answer.id))
    expect([row!.personId, row!.anonymousId]).toEqual([null, null])
    const { db } = await testDatabase()
    const trail = await db.select().from(auditEntries).where(eq(auditEntries.businessId, s.businessId))
    const entry = trail.find((e) => e.action === 'analytics.erased')
    expect(entry).toMatchObject({
      actor: `key:${s.keyId}`,
      keyId: s.keyId,
      requestId: created.headers.get('x-request-id'),
      changes: { erasure: { from: null, to: answer.id }, deleted: { from: null, to: erased } },
    })
    const everything = JSON.stringify(await db.select().from(auditEntries))
    expect(everything).not.toContain(PERSON)
    expect(everything).not.toContain(VISITOR)
    const admin = await s.http.admin(`/businesses/${s.businessId}/audit`)
    const shown = await admin.text()
    expect(shown).toContain('analytics.erased')
    expect(shown).not.toContain(PERSON)
  })

  test('reads hide the events of a pending request received before it, by either identifier, and only those', async () => {
    const s = await setup()
    await storeHistory(s)
    const { db } = await testEventsDatabase()
    // A request no worker has taken (inserted as another instance would): the read alone hides.
    await db.insert(analyticsErasures).values({ businessId: s.businessId, anonymousId: VISITOR, requestedBy: 'admin' })
    expect((await listed(s.http, s.sk)).map((e) => e.eventType).sort()).toEqual(['e0', 'e1', 'e2', 'e5', 'e6'])
    await db
      .insert(analyticsErasures)
      .values({ businessId: s.businessId, personId: 'someone-else', requestedBy: 'admin', requestedAt: new Date(Date.now() - 2.5 * DAY) })
    // someone-else's event of 3 days ago was received before that request, the one of 2 days ago after it (and is the visitor's).
    expect((await listed(s.http, s.sk)).map((e) => e.eventType).sort()).toEqual(['e0', 'e1', 'e2', 'e6'])
    expect(await listed(s.http, s.otherSk)).toHaveLength(7)
  })

  test('deletes in bounded batches until none is left: more events than one batch', async () => {
    const s = await setup({ erasure: { settleMs: 0, batchRows: 3 } })
    const { db } = await testEventsDatabase()
    const now = Date.now()
    await db.insert(analyticsEvents).values(
      Array.from({ length: 20 }, (_, i) => ({
        businessId: s.businessId,
        keyId: s.keyId,
        eventType: 'many',
        personId: PERSON,
        occurredAt: new Date(now - (i % 4) * 20 * DAY - 60_000),
        receivedAt: new Date(now - 60_000),
      })),
    )
    const deletes = await watchEventDeletes(db)
    try {
      const created = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON } })
      const { id } = (await created.json()) as { id: string }
      expect(await untilDone(() => s.http.api(`/analytics/erasures/${id}`, s.sk))).toMatchObject({ status: 'done', deleted: 20 })
      // Every statement removed at most a batch: the 20 events took at least 7 of them.
      const perStatement = await deletes.rowsPerStatement()
      expect(perStatement.reduce((sum, n) => sum + n, 0)).toBe(20)
      expect(Math.max(...perStatement)).toBeLessThanOrEqual(3)
    } finally {
      await deletes.stop()
    }
    expect(await storedCount(s.businessId)).toBe(0)
  })

  test('a business without events: the request is done at once, 0 deleted', async () => {
    const s = await setup()
    const created = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON } })
    const { id } = (await created.json()) as { id: string }
    expect(await untilDone(() => s.http.api(`/analytics/erasures/${id}`, s.sk))).toMatchObject({ status: 'done', deleted: 0 })
  })

  test("a business whose only event is the person's: its one window is worked, the event goes", async () => {
    const s = await setup()
    const { db } = await testEventsDatabase()
    // One event: the span's first and last instants are the same.
    await db.insert(analyticsEvents).values({
      businessId: s.businessId,
      keyId: s.keyId,
      eventType: 'only',
      anonymousId: VISITOR,
      occurredAt: new Date(Date.now() - 60_000),
      receivedAt: new Date(Date.now() - 60_000),
    })
    const created = await s.http.api('/analytics/erasures', s.sk, { body: { anonymousId: VISITOR } })
    const { id } = (await created.json()) as { id: string }
    expect(await untilDone(() => s.http.api(`/analytics/erasures/${id}`, s.sk))).toMatchObject({ status: 'done', deleted: 1 })
    expect(await storedCount(s.businessId)).toBe(0)
  })

  test('picked up at start-up: a pending request left by an earlier run is finished', async () => {
    const s = await setup()
    await storeHistory(s)
    // The earlier run stopped (its scheduler with it) and left a pending request behind.
    await s.service.drain()
    const { db } = await testEventsDatabase()
    const [left] = await db
      .insert(analyticsErasures)
      .values({ businessId: s.businessId, personId: PERSON, requestedBy: 'admin' })
      .returning()
    const restarted = await testService({ eventRetentionDays: 400 })
    await restarted.services.erasures.idle()
    expect(await untilDone(() => s.http.api(`/analytics/erasures/${left!.id}`, s.sk))).toMatchObject({ status: 'done', deleted: 3 })
  })

  test('a stop after a request was told but before it was marked done: the next run marks it done and tells nobody twice', async () => {
    const s = await setup()
    await storeHistory(s)
    await s.service.drain()
    // The earlier run deleted the events, wrote the audit entry and the webhook event (on the
    // service's database), and stopped before marking the request done (on the events').
    const [left] = await (await testEventsDatabase()).db
      .insert(analyticsErasures)
      .values({ businessId: s.businessId, personId: PERSON, requestedBy: 'admin' })
      .returning()
    const { db } = await testDatabase()
    await db.insert(webhookEvents).values({
      id: Bun.randomUUIDv7(),
      businessId: s.businessId,
      type: 'erasure.completed',
      payload: { erasureId: left!.id },
      dedupeKey: `erasure.completed:${left!.id}`,
    })
    await db.insert(auditEntries).values({
      id: Bun.randomUUIDv7(),
      businessId: s.businessId,
      at: new Date(),
      actor: 'admin',
      action: 'analytics.erased',
      changes: { erasure: { from: null, to: left!.id } },
    })
    const restarted = await testService({ eventRetentionDays: 400 })
    await restarted.services.erasures.idle()
    expect(await untilDone(() => s.http.api(`/analytics/erasures/${left!.id}`, s.sk))).toMatchObject({ status: 'done' })
    const told = await db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.businessId, s.businessId), eq(webhookEvents.type, 'erasure.completed')))
    const audited = await db
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.businessId, s.businessId), eq(auditEntries.action, 'analytics.erased')))
    expect([told.length, audited.length]).toEqual([1, 1])
  })

  test('an event received before the request but committed within the settling time is deleted by the one pass after it', async () => {
    const s = await setup({ erasure: { settleMs: 1_500, retryDelayMs: 100 } })
    const erased = await storeHistory(s)
    const created = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON, anonymousId: VISITOR } })
    const { id } = (await created.json()) as { id: string }
    await s.service.services.erasures.idle()
    const pending = (await (await s.http.api(`/analytics/erasures/${id}`, s.sk)).json()) as ErasureAnswer
    expect(pending).toMatchObject({ status: 'pending' })
    // A group commit in flight when the request came: received before it, stored only now.
    const { db } = await testEventsDatabase()
    await db.insert(analyticsEvents).values({
      businessId: s.businessId,
      keyId: s.keyId,
      eventType: 'late',
      personId: PERSON,
      occurredAt: new Date(Date.parse(pending.requestedAt) - 1_000),
      receivedAt: new Date(Date.parse(pending.requestedAt) - 1_000),
    })
    expect((await listed(s.http, s.sk)).map((e) => e.eventType)).not.toContain('late')
    expect(await untilDone(() => s.http.api(`/analytics/erasures/${id}`, s.sk))).toMatchObject({ status: 'done', deleted: erased + 1 })
    expect(await storedCount(s.businessId)).toBe(2)
  })

  test('two instances on one database: the request is done once, counted once, audited once', async () => {
    const s = await setup()
    const erased = await storeHistory(s)
    const second = await testService({ eventRetentionDays: 400 })
    loopback(second)
    const created = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON, anonymousId: VISITOR } })
    const { id } = (await created.json()) as { id: string }
    expect(await untilDone(() => s.http.api(`/analytics/erasures/${id}`, s.sk))).toMatchObject({ status: 'done', deleted: erased })
    await Promise.all([s.service.services.erasures.idle(), second.services.erasures.idle()])
    const { db } = await testDatabase()
    const entries = await db
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.businessId, s.businessId), eq(auditEntries.action, 'analytics.erased')))
    expect(entries).toHaveLength(1)
    expect(await storedCount(s.businessId)).toBe(2)
  })

  test('a public key: 403 public_key_not_allowed, nothing recorded', async () => {
    const s = await setup()
    const response = await s.http.api('/analytics/erasures', s.pk, { body: { personId: PERSON }, origin: ORIGIN })
    expect(response.status).toBe(403)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('public_key_not_allowed')
    expect(await (await testEventsDatabase()).db.select().from(analyticsErasures)).toEqual([])
  })

  test('a key without ANALYTICS_WRITE: 403 insufficient_scope', async () => {
    const s = await setup()
    const reader = await seedKey(s.service, s.businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const response = await s.http.api('/analytics/erasures', reader.key, { body: { personId: PERSON } })
    expect(response.status).toBe(403)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('insufficient_scope')
  })

  test('neither identifier, an empty one, a non-string, an unknown field or no JSON: 400 naming what is wrong, nothing recorded', async () => {
    const s = await setup()
    const cases: [unknown, string][] = [
      [{}, 'personId'],
      [{ personId: '' }, 'personId'],
      [{ anonymousId: '' }, 'anonymousId'],
      [{ personId: PERSON, anonymousId: '' }, 'anonymousId'],
      [{ personId: 42 }, 'personId'],
      [{ personId: 'x'.repeat(201) }, 'personId'],
      [{ personId: PERSON, email: 'a@example.com' }, 'email'],
      ['not json', ''],
    ]
    for (const [body, field] of cases) {
      const response = await s.http.api('/analytics/erasures', s.sk, { body })
      const { error } = (await response.json()) as { error: { code: string; message: string } }
      expect([response.status, error.code], JSON.stringify(body)).toEqual([400, 'invalid_request'])
      expect(error.message, JSON.stringify(body)).toContain(field)
    }
    expect(await (await testEventsDatabase()).db.select().from(analyticsErasures)).toEqual([])
  })
})

describe('GET /api/v0/analytics/erasures/:id', () => {
  test("an unknown id or another business's: 404; a malformed id: 400", async () => {
    const s = await setup()
    const created = await s.http.api('/analytics/erasures', s.otherSk, { body: { personId: PERSON } })
    const { id } = (await created.json()) as { id: string }
    expect((await s.http.api(`/analytics/erasures/${id}`, s.otherSk)).status).toBe(200)
    const foreign = await s.http.api(`/analytics/erasures/${id}`, s.sk)
    expect([foreign.status, ((await foreign.json()) as { error: { code: string } }).error.code]).toEqual([404, 'not_found'])
    expect((await s.http.api(`/analytics/erasures/${crypto.randomUUID()}`, s.sk)).status).toBe(404)
    expect((await s.http.api('/analytics/erasures/nope', s.sk)).status).toBe(400)
    await s.service.services.erasures.idle()
  })
})

describe('operators: POST /admin/v0/businesses/:id/erasures', () => {
  test('erases like the API does, audited with actor admin; GET shows it; another business or an unknown one: 404', async () => {
    const s = await setup()
    await storeHistory(s)
    const created = await s.http.admin(`/businesses/${s.businessId}/erasures`, { body: { anonymousId: VISITOR } })
    expect(created.status).toBe(202)
    const { id, status } = (await created.json()) as { id: string; status: string }
    expect(status).toBe('pending')
    const done = await untilDone(() => s.http.admin(`/businesses/${s.businessId}/erasures/${id}`))
    expect(done).toMatchObject({ status: 'done', deleted: 2 })
    expect((await s.http.admin(`/businesses/${s.otherBusiness}/erasures/${id}`)).status).toBe(404)
    expect((await s.http.admin(`/businesses/${crypto.randomUUID()}/erasures`, { body: { personId: PERSON } })).status).toBe(404)
    expect((await s.http.admin(`/businesses/${s.businessId}/erasures`, { body: {} })).status).toBe(400)
    const { db } = await testDatabase()
    const [entry] = await db
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.businessId, s.businessId), eq(auditEntries.action, 'analytics.erased')))
    expect(entry).toMatchObject({ actor: 'admin', keyId: null, changes: { deleted: { from: null, to: 2 } } })
    expect(JSON.stringify(entry)).not.toContain(VISITOR)
    expect(await storedCount(s.otherBusiness)).toBe(7)
  })
})

describe('fair between businesses, bounded per business, harmless to reads', () => {
  test("one business's 5,000 pending requests delay another's by one pass at most: the worker serves businesses in turn", async () => {
    const s = await setup()
    await storeHistory(s)
    const { db } = await testEventsDatabase()
    // A flood as another instance would have left it (past the 100 cap: written directly), older than the other's request.
    const flooded = Date.now() - 60_000
    for (let from = 0; from < 5_000; from += 1_000) {
      await db.insert(analyticsErasures).values(
        Array.from({ length: 1_000 }, (_, i) => ({
          businessId: s.otherBusiness,
          personId: `flood-${from + i}`,
          requestedBy: 'admin',
          requestedAt: new Date(flooded + from + i),
        })),
      )
    }
    const created = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON } })
    expect(created.status).toBe(202)
    const { id } = (await created.json()) as { id: string }
    const done = await untilDone(() => s.http.api(`/analytics/erasures/${id}`, s.sk))
    expect(done).toMatchObject({ status: 'done', deleted: 3 })
    await s.service.services.erasures.close()

    // Between this request's arrival and its end, the flooding business had one pass at most
    // (of at most 100 of its requests): the one under way when it arrived. Passes the worker
    // ran before it arrived are no delay of it.
    const [between] = await queryRows<{ n: number }>(
      db,
      sql`select count(*)::int as n from analytics_erasures
          where business_id = ${s.otherBusiness} and status = 'done'
            and completed_at > ${done.requestedAt}::timestamptz and completed_at <= ${done.completedAt}::timestamptz`,
    )
    expect(between!.n).toBeLessThanOrEqual(100)
    // And the flood was still mostly waiting: the other business did not wait for it to drain.
    const [waiting] = await queryRows<{ n: number }>(
      db,
      sql`select count(*)::int as n from analytics_erasures where business_id = ${s.otherBusiness} and status = 'pending'`,
    )
    expect(waiting!.n).toBeGreaterThan(4_000)
  })

  test('at most 100 pending a business: the 101st answers 429 rate_limited with Retry-After, nothing written, by the API and the admin API alike; other businesses go on', async () => {
    // Nothing finishes during the test: the worker waits far longer than it runs.
    const s = await setup({ erasure: { settleMs: 600_000 } })
    const { db } = await testEventsDatabase()
    await db
      .insert(analyticsErasures)
      .values(Array.from({ length: 99 }, (_, i) => ({ businessId: s.businessId, personId: `earlier-${i}`, requestedBy: 'admin' })))
    const hundredth = await s.http.api('/analytics/erasures', s.sk, { body: { personId: PERSON } })
    expect(hundredth.status).toBe(202)

    const refused = await s.http.api('/analytics/erasures', s.sk, { body: { personId: 'one-too-many' } })
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    const { error } = (await refused.json()) as { error: { code: string; message: string; requestId: string } }
    expect(error).toEqual({
      code: 'rate_limited',
      message: expect.stringContaining('100 erasure requests pending'),
      requestId: expect.any(String),
    })
    const byAdmin = await s.http.admin(`/businesses/${s.businessId}/erasures`, { body: { anonymousId: 'one-too-many' } })
    expect(byAdmin.status).toBe(429)
    expect(byAdmin.headers.get('retry-after')).not.toBeNull()
    expect(((await byAdmin.json()) as { error: { code: string } }).error.code).toBe('rate_limited')

    const rows = await db.select().from(analyticsErasures).where(eq(analyticsErasures.businessId, s.businessId))
    expect(rows).toHaveLength(100)
    expect(JSON.stringify(rows)).not.toContain('one-too-many')
    expect((await s.http.api('/analytics/erasures', s.otherSk, { body: { personId: PERSON } })).status).toBe(202)

    // A finished request makes room again.
    await db
      .update(analyticsErasures)
      .set({ status: 'done', completedAt: new Date(), personId: null })
      .where(and(eq(analyticsErasures.businessId, s.businessId), eq(analyticsErasures.personId, 'earlier-0')))
    expect((await s.http.api('/analytics/erasures', s.sk, { body: { personId: 'one-too-many' } })).status).toBe(202)
  })

  test("reads with 100 pending answer 200 with the right rows: the pending persons' earlier events hidden, their later ones and everyone else's shown", async () => {
    const s = await setup()
    const { db } = await testEventsDatabase()
    const now = Date.now()
    const asked = new Date(now - DAY)
    // Held by no worker: claimed for longer than the test runs.
    await db.insert(analyticsErasures).values(
      Array.from({ length: 100 }, (_, i) => ({
        businessId: s.businessId,
        ...(i % 2 === 0 ? { personId: `pending-${i}` } : { anonymousId: `pending-${i}` }),
        requestedBy: 'admin',
        requestedAt: asked,
        claimedUntil: new Date(now + 600_000),
      })),
    )
    const event = (eventType: string, who: { personId?: string; anonymousId?: string }, receivedAt: Date) => ({
      ...who,
      businessId: s.businessId,
      keyId: s.keyId,
      eventType,
      occurredAt: receivedAt,
      receivedAt,
    })
    await db.insert(analyticsEvents).values(
      Array.from({ length: 100 }, (_, i) => {
        const who = i % 2 === 0 ? { personId: `pending-${i}` } : { anonymousId: `pending-${i}` }
        return [
          event(`hidden-${i}`, who, new Date(now - 2 * DAY - i * 1_000)),
          event(`later-${i}`, who, new Date(now - 1_000 - i)),
          event(
            `other-${i}`,
            i % 2 === 0 ? { personId: `other-${i}` } : { anonymousId: `other-${i}` },
            new Date(now - 2 * DAY - i * 1_000),
          ),
          // The other identifier is not the one erased: personId pending-1 was not asked for (anonymousId pending-1 was).
          event(`crossed-${i}`, i % 2 === 0 ? { anonymousId: `pending-${i}` } : { personId: `pending-${i}` }, new Date(now - 3 * DAY - i)),
        ]
      }).flat(),
    )
    const shown = (await listed(s.http, s.sk)).map((e) => e.eventType)
    expect(shown).toHaveLength(300)
    expect(shown.filter((type) => type.startsWith('hidden-'))).toEqual([])
    expect(shown.filter((type) => type.startsWith('later-'))).toHaveLength(100)
    expect(shown.filter((type) => type.startsWith('other-'))).toHaveLength(100)
    expect(shown.filter((type) => type.startsWith('crossed-'))).toHaveLength(100)
    expect(await listed(s.http, s.otherSk)).toEqual([])
  })

  test('finished requests are deleted 30 days after they finished; recent ones and pending ones are kept', async () => {
    const s = await setup({ erasure: { settleMs: 600_000 } })
    const { db } = await testEventsDatabase()
    const now = Date.now()
    const rows = await db
      .insert(analyticsErasures)
      .values([
        {
          businessId: s.businessId,
          requestedBy: 'admin',
          status: 'done' as const,
          requestedAt: new Date(now - 32 * DAY),
          completedAt: new Date(now - 31 * DAY),
        },
        {
          businessId: s.businessId,
          requestedBy: 'admin',
          status: 'done' as const,
          requestedAt: new Date(now - 30 * DAY),
          completedAt: new Date(now - 29 * DAY),
        },
        { businessId: s.businessId, requestedBy: 'admin', personId: PERSON, requestedAt: new Date(now - 40 * DAY) },
      ])
      .returning()
    const [old, recent, pending] = rows.map((row) => row.id) as [string, string, string]
    // The hourly event maintenance prunes them, on the one instance that holds its lock.
    const report = await maintainEvents(await testEventsDatabase(), {
      serviceDb: (await testDatabase()).db,
      retentionDays: DEFAULT_EVENT_RETENTION_DAYS,
    })
    expect(report.failed).toEqual([])
    expect(report.pruned).toBe(1)
    const kept = await db.select({ id: analyticsErasures.id }).from(analyticsErasures)
    expect(kept.map((row) => row.id).sort()).toEqual([recent, pending].sort())
    expect((await s.http.api(`/analytics/erasures/${old}`, s.sk)).status).toBe(404)
    expect((await s.http.api(`/analytics/erasures/${recent}`, s.sk)).status).toBe(200)
  })
})
