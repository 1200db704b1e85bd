import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { analyticsEvents, auditEntries, businesses } from '../../db/schema/index.ts'
import { loadConfig } from '../../src/config.ts'
import { maintainEvents } from '../../src/events/maintenance.ts'
import { testDatabase, testEventsDatabase } from '../support/database.ts'
import { loopback } from '../support/loopback.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'

// EVENT_RETENTION_DAYS and a business's own eventRetentionDays,
// reads that stop answering expired events at once, and the `timestamp` bounds on ingestion.

const OPERATOR_DAYS = 30
const DAY = 86_400_000
const ORIGIN = 'https://www.example.com'

async function setup() {
  const service = await testService({ eventRetentionDays: OPERATOR_DAYS })
  const businessId = await seedBusiness(service)
  const writer = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'] })
  const reader = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
  return { service, businessId, pk: writer.key, sk: reader.key, keyId: writer.record.id, http: loopback(service) }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** Events stored as if accepted earlier, `daysAgo` each, bypassing today's bounds. */
async function storeEventsAged(s: Setup, daysAgo: number[], businessId = s.businessId) {
  const { db } = await testEventsDatabase()
  const now = Date.now()
  await db.insert(analyticsEvents).values(
    daysAgo.map((days) => ({
      businessId,
      keyId: s.keyId,
      eventType: `aged_${days}`,
      occurredAt: new Date(now - days * DAY),
      receivedAt: new Date(now - days * DAY),
    })),
  )
}

async function listedTypes(s: Setup): Promise<string[]> {
  const response = await s.http.api('/analytics?limit=100', s.sk)
  expect(response.status).toBe(200)
  const page = (await response.json()) as { data: { eventType: string }[] }
  return page.data.map((e) => e.eventType)
}

async function patch(s: Setup, body: unknown, id = s.businessId) {
  return s.http.admin(`/businesses/${id}`, { method: 'PATCH', body })
}

async function storedDays(businessId: string) {
  const [row] = await (await testDatabase()).db.select().from(businesses).where(eq(businesses.id, businessId))
  return row!.eventRetentionDays
}

async function auditOf(businessId: string) {
  return (await testDatabase()).db.select().from(auditEntries).where(eq(auditEntries.businessId, businessId))
}

describe('EVENT_RETENTION_DAYS', () => {
  test('defaults to 400; a whole number of days from 1 is taken; anything else refuses to start, naming the variable', () => {
    expect(loadConfig({}).eventRetentionDays).toBe(400)
    expect(loadConfig({ EVENT_RETENTION_DAYS: '90' }).eventRetentionDays).toBe(90)
    for (const bad of ['0', '-1', '1.5', 'ninety', '90d', '1e3', '99999999']) {
      expect(() => loadConfig({ EVENT_RETENTION_DAYS: bad }), bad).toThrow(/EVENT_RETENTION_DAYS must be a whole number of days from 1/)
    }
  })
})

describe('PATCH /admin/v0/businesses/:id {eventRetentionDays}', () => {
  test('sets, shows and resets the setting; each change is audited as business.updated with before and after', async () => {
    const s = await setup()
    const listed = await s.http.admin('/businesses')
    const [record] = ((await listed.json()) as { data: Record<string, unknown>[] }).data
    expect(record).toMatchObject({ id: s.businessId, eventRetentionDays: null, effectiveEventRetentionDays: OPERATOR_DAYS })

    const set = await patch(s, { eventRetentionDays: 7 })
    expect(set.status).toBe(200)
    expect(await set.json()).toMatchObject({ id: s.businessId, name: 'Acme', eventRetentionDays: 7, effectiveEventRetentionDays: 7 })
    const shown = await s.http.admin(`/businesses/${s.businessId}`)
    expect(await shown.json()).toMatchObject({ eventRetentionDays: 7, effectiveEventRetentionDays: 7 })

    const reset = await patch(s, { eventRetentionDays: null })
    expect(await reset.json()).toMatchObject({ eventRetentionDays: null, effectiveEventRetentionDays: OPERATOR_DAYS })

    const again = await patch(s, { eventRetentionDays: null })
    expect(again.status).toBe(200)
    const entries = await auditOf(s.businessId)
    const updates = entries.filter((e) => e.action === 'business.updated').sort((a, b) => a.at.getTime() - b.at.getTime())
    // A change that changes nothing is no change: two entries, not three.
    expect(updates.map((e) => [e.actor, e.changes])).toEqual([
      ['admin', { eventRetentionDays: { from: null, to: 7 } }],
      ['admin', { eventRetentionDays: { from: 7, to: null } }],
    ])
    expect(updates[0]!.requestId).toBe(set.headers.get('x-request-id'))
  })

  test('0, above the operator value, a string, a fraction, a negative, an empty body or an unknown field: 400 naming the field, nothing changes', async () => {
    const s = await setup()
    await patch(s, { eventRetentionDays: 10 })
    const before = await auditOf(s.businessId)
    for (const bad of [0, OPERATOR_DAYS + 1, '7', 1.5, -3, true, [7]]) {
      const response = await patch(s, { eventRetentionDays: bad })
      const { error } = (await response.json()) as { error: { code: string; message: string; requestId: string } }
      expect([response.status, error.code], JSON.stringify(bad)).toEqual([400, 'invalid_request'])
      expect(error.message, JSON.stringify(bad)).toContain('eventRetentionDays')
      expect(error.requestId).toBe(response.headers.get('x-request-id')!)
    }
    const above = await patch(s, { eventRetentionDays: OPERATOR_DAYS + 1 })
    expect(((await above.json()) as { error: { message: string } }).error.message).toContain(`from 1 to ${OPERATOR_DAYS}`)
    expect((await patch(s, {})).status).toBe(400)
    expect((await patch(s, { eventRetentionDays: 5, color: 'red' })).status).toBe(400)
    expect(await storedDays(s.businessId)).toBe(10)
    expect(await auditOf(s.businessId)).toEqual(before)
  })

  test('an unknown business answers 404, a malformed id 400, a missing token 401', async () => {
    const s = await setup()
    expect((await patch(s, { eventRetentionDays: 5 }, crypto.randomUUID())).status).toBe(404)
    expect((await patch(s, { eventRetentionDays: 5 }, 'not-a-uuid')).status).toBe(400)
    const anonymous = await fetch(`${s.http.base}/admin/v0/businesses/${s.businessId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ eventRetentionDays: 5 }),
    })
    expect(anonymous.status).toBe(401)
    expect(await storedDays(s.businessId)).toBeNull()
  })
})

describe('reads follow the retention at once', () => {
  test('GET /api/v0/analytics never answers an event older than the retention, and a shorter one hides more at once', async () => {
    const s = await setup()
    await storeEventsAged(s, [1, 10, 29, 31, 200])
    expect((await listedTypes(s)).sort()).toEqual(['aged_1', 'aged_10', 'aged_29'])
    await patch(s, { eventRetentionDays: 5 })
    expect(await listedTypes(s)).toEqual(['aged_1'])
    // Back to the operator's value: what the shorter one expired stays expired.
    await patch(s, { eventRetentionDays: null })
    expect(await listedTypes(s)).toEqual(['aged_1'])
  })

  test('lowering is final: events it expired never come back when the retention is raised, and maintenance deletes them', async () => {
    const s = await setup()
    await storeEventsAged(s, [1, 5, 20, 25])
    // A change that expires nothing hides nothing.
    expect((await patch(s, { eventRetentionDays: OPERATOR_DAYS })).status).toBe(200)
    expect((await listedTypes(s)).sort()).toEqual(['aged_1', 'aged_20', 'aged_25', 'aged_5'])
    expect((await patch(s, { eventRetentionDays: 10 })).status).toBe(200)
    expect((await listedTypes(s)).sort()).toEqual(['aged_1', 'aged_5'])
    const raised = await patch(s, { eventRetentionDays: 30 })
    expect(await raised.json()).toMatchObject({ eventRetentionDays: 30, effectiveEventRetentionDays: 30 })
    expect((await listedTypes(s)).sort()).toEqual(['aged_1', 'aged_5'])
    // Nor by another way back (the operator's value), nor on the dashboard's query with a range.
    await patch(s, { eventRetentionDays: null })
    expect((await listedTypes(s)).sort()).toEqual(['aged_1', 'aged_5'])
    const ranged = await s.http.api(`/analytics?from=${new Date(Date.now() - 29 * DAY).toISOString()}`, s.sk)
    expect(((await ranged.json()) as { data: { eventType: string }[] }).data.map((e) => e.eventType).sort()).toEqual(['aged_1', 'aged_5'])
    // Still on disk until maintenance, which deletes them though the retention is 30 days again.
    const stored = async () =>
      (await (await testEventsDatabase()).db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, s.businessId)))
        .map((e) => e.eventType)
        .sort()
    expect(await stored()).toEqual(['aged_1', 'aged_20', 'aged_25', 'aged_5'])
    // (Maintenance as an operator keeping 400 days runs it: no other test's partition or row goes.)
    const report = await maintainEvents(await testEventsDatabase(), {
      serviceDb: (await testDatabase()).db,
      retentionDays: 400,
      pauseMs: 0,
    })
    expect(report.failed).toEqual([])
    expect(await stored()).toEqual(['aged_1', 'aged_5'])
    expect((await listedTypes(s)).sort()).toEqual(['aged_1', 'aged_5'])
  })

  test("one business's retention never hides another's events", async () => {
    const s = await setup()
    const other = await seedBusiness(s.service, 'Other')
    const otherReader = await seedKey(s.service, other, { type: 'private', scopes: ['ANALYTICS_READ'] })
    await storeEventsAged(s, [10], other)
    await patch(s, { eventRetentionDays: 1 })
    const response = await s.http.api('/analytics', otherReader.key)
    expect(((await response.json()) as { data: unknown[] }).data).toHaveLength(1)
  })
})

describe('POST /api/v0/analytics: timestamp within [now - retention, now + 24 h]', () => {
  const track = (s: Setup, body: unknown) => s.http.api('/analytics', s.pk, { body, origin: ORIGIN })

  test('more than 24 h ahead: 400 invalid_request naming timestamp and the bound; nothing stored', async () => {
    const s = await setup()
    const response = await track(s, { eventType: 'page_view', timestamp: new Date(Date.now() + DAY + 60_000).toISOString() })
    const { error } = (await response.json()) as { error: { code: string; message: string } }
    expect([response.status, error.code]).toEqual([400, 'invalid_request'])
    expect(error.message).toContain('"timestamp"')
    expect(error.message).toContain('at most 24 hours after the request')
    expect(await listedTypes(s)).toEqual([])
  })

  test("older than the business's retention: 400 naming timestamp, the bound and the days; a shorter setting holds at once", async () => {
    const s = await setup()
    const old = await track(s, { eventType: 'page_view', timestamp: new Date(Date.now() - (OPERATOR_DAYS + 1) * DAY).toISOString() })
    const { error } = (await old.json()) as { error: { code: string; message: string } }
    expect([old.status, error.code]).toEqual([400, 'invalid_request'])
    expect(error.message).toMatch(/"timestamp".*not before \d{4}-\d\d-\d\dT.*keeps events 30 days/)

    const sixDaysAgo = new Date(Date.now() - 6 * DAY).toISOString()
    expect((await track(s, { eventType: 'page_view', timestamp: sixDaysAgo })).status).toBe(202)
    await patch(s, { eventRetentionDays: 5 })
    const refused = await track(s, { events: [{ eventType: 'ok' }, { eventType: 'late', timestamp: sixDaysAgo }] })
    const refusal = (await refused.json()) as { error: { message: string } }
    expect(refused.status).toBe(400)
    expect(refusal.error.message).toContain('"events[1].timestamp"')
    expect(refusal.error.message).toContain('keeps events 5 days')
    expect((await track(s, { eventType: 'recent', timestamp: new Date(Date.now() - 4 * DAY).toISOString() })).status).toBe(202)
    // The six-day-old event stored before is now past the retention: reads no longer answer it.
    expect(await listedTypes(s)).toEqual(['recent'])
  })

  test('after a lowered retention is raised again, a timestamp it expired is still refused, naming why; a later one is taken', async () => {
    const s = await setup()
    await patch(s, { eventRetentionDays: 10 })
    await patch(s, { eventRetentionDays: 30 })
    const expired = await track(s, { eventType: 'late', timestamp: new Date(Date.now() - 20 * DAY).toISOString() })
    const { error } = (await expired.json()) as { error: { code: string; message: string } }
    expect([expired.status, error.code]).toEqual([400, 'invalid_request'])
    expect(error.message).toMatch(
      /"timestamp".*not before \d{4}-\d\d-\d\dT.*keeps events 30 days, and a change of its retention expired those before this time/,
    )
    expect((await track(s, { eventType: 'kept', timestamp: new Date(Date.now() - 9 * DAY).toISOString() })).status).toBe(202)
    expect(await listedTypes(s)).toEqual(['kept'])
  })
})
