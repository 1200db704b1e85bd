import { describe, expect, test } from 'bun:test'
import { arrivalPosition, type EventRecord, LIVE_LOOKBACK_MS, listArrivedEvents, listEvents, toEventRecord } from '../../src/events/read.ts'
import { type EventRow, eventWriter } from '../../src/events/write.ts'
import { decodePosition, positionCursor } from '../../src/shared/paging.ts'
import { testEventsDatabase } from '../support/database.ts'

// The one read of a business's events (src/events/read.ts), called directly: which events
// each filter keeps, in which order, and what the live view is told (docs/api.md,
// "Retention"; the dashboard's live view, src/dashboard/events.ts).

const MINUTE = 60_000
const NOW = Date.now()
const at = (minutesAgo: number) => new Date(NOW - minutesAgo * MINUTE).toISOString()

function row(businessId: string, keyId: string, occurredMinutesAgo: number, more: Partial<EventRow> = {}): EventRow {
  return {
    id: Bun.randomUUIDv7(),
    business_id: businessId,
    key_id: keyId,
    origin: null,
    event_type: 'page_view',
    url: null,
    referrer: null,
    anonymous_id: 'a-1',
    person_id: null,
    properties: {},
    occurred_at: at(occurredMinutesAgo),
    received_at: at(0),
    untimed: false,
    ...more,
  }
}

/** A business of its own with events written through the service's writer. */
async function businessWith(make: (businessId: string, keyId: string) => EventRow[]) {
  const { db } = await testEventsDatabase()
  const businessId = crypto.randomUUID()
  const keyId = crypto.randomUUID()
  const rows = make(businessId, keyId)
  await eventWriter(db)(rows)
  return { db, businessId, keyId, rows }
}

const ids = (events: readonly EventRecord[]) => events.map((e) => e.id)
const page = { after: null, limit: 100 }
const ALL = new Date(0)

describe('listEvents', () => {
  test("newest first by the event's time, only the business's own, and each filter's bounds", async () => {
    const other = await businessWith((b, k) => [row(b, k, 1)])
    const { db, businessId, keyId, rows } = await businessWith((b, k) => [
      row(b, k, 30, { event_type: 'signup' }),
      row(b, k, 20),
      row(b, crypto.randomUUID(), 10),
      row(b, k, 5, { event_type: 'signup', url: 'https://x.example/', properties: { plan: 'pro' } }),
    ])
    const [old, mid, otherKey, recent] = rows as [EventRow, EventRow, EventRow, EventRow]
    const list = (filter: Partial<Parameters<typeof listEvents>[2]>) => listEvents(db, businessId, { keptSince: ALL, ...page, ...filter })
    expect(ids((await list({})).data)).toEqual([recent.id, otherKey.id, mid.id, old.id])
    expect(ids((await listEvents(other.db, other.businessId, { keptSince: ALL, ...page })).data)).toEqual([other.rows[0]!.id])
    // keptSince and from keep an event at the bound; to leaves it out.
    expect(ids((await list({ keptSince: new Date(mid.occurred_at) })).data)).toEqual([recent.id, otherKey.id, mid.id])
    expect(ids((await list({ from: new Date(mid.occurred_at) })).data)).toEqual([recent.id, otherKey.id, mid.id])
    expect(ids((await list({ to: new Date(mid.occurred_at) })).data)).toEqual([old.id])
    expect(ids((await list({ type: 'signup' })).data)).toEqual([recent.id, old.id])
    expect(ids((await list({ keyId })).data)).toEqual([recent.id, mid.id, old.id])
    expect(
      (await list({ type: 'signup', keyId, from: new Date(old.occurred_at), to: new Date(recent.occurred_at) })).data.map((e) => e.id),
    ).toEqual([old.id])
    // Each event as the API and the dashboard show it.
    expect((await list({ limit: 1 })).data).toEqual([
      {
        id: recent.id,
        eventType: 'signup',
        url: 'https://x.example/',
        referrer: null,
        anonymousId: 'a-1',
        personId: null,
        properties: { plan: 'pro' },
        timestamp: recent.occurred_at,
        receivedAt: recent.received_at,
        keyId,
        origin: null,
      },
    ])
  })

  test('a page of `limit` events and a cursor to the rest; the last page has none', async () => {
    const { db, businessId, rows } = await businessWith((b, k) => [row(b, k, 3), row(b, k, 2), row(b, k, 1)])
    const first = await listEvents(db, businessId, { keptSince: ALL, after: null, limit: 2 })
    expect(ids(first.data)).toEqual([rows[2]!.id, rows[1]!.id])
    expect(first.nextCursor).not.toBeNull()
    const second = await listEvents(db, businessId, { keptSince: ALL, after: decodePosition(first.nextCursor!), limit: 2 })
    expect(ids(second.data)).toEqual([rows[0]!.id])
    expect(second.nextCursor).toBeNull()
  })
})

describe('listArrivedEvents', () => {
  test('the events that arrived after `since`, newest arrival first, dated within the hour before it; `more` and `newest` for the next ask', async () => {
    const { db, businessId, rows } = await businessWith((b, k) => [
      row(b, k, 10, { received_at: at(4) }),
      row(b, k, 50, { received_at: at(3) }),
      row(b, k, 70, { received_at: at(2) }),
      row(b, k, -60 * 24, { received_at: at(1) }),
    ])
    const [early, withinHour, beforeHour, ahead] = rows as [EventRow, EventRow, EventRow, EventRow]
    const since = { at: new Date(NOW - 5 * MINUTE), id: '00000000-0000-0000-0000-000000000000' }
    const all = await listArrivedEvents(db, businessId, { keptSince: ALL, since, limit: 10 })
    // Dated a day ahead, it is still new by arrival; dated more than LIVE_LOOKBACK_MS before `since`, it waits for a reload.
    expect(ids(all.data)).toEqual([ahead.id, withinHour.id, early.id])
    expect(NOW - 5 * MINUTE - Date.parse(beforeHour.occurred_at)).toBeGreaterThan(LIVE_LOOKBACK_MS)
    expect(all.more).toBe(false)
    expect(all.newest).toBe(positionCursor(new Date(ahead.received_at), ahead.id))
    const two = await listArrivedEvents(db, businessId, { keptSince: ALL, since, limit: 2 })
    expect(ids(two.data)).toEqual([ahead.id, withinHour.id])
    expect(two.more).toBe(true)
    // Exactly `limit` arrived: all shown, nothing left out.
    const three = await listArrivedEvents(db, businessId, { keptSince: ALL, since, limit: 3 })
    expect(ids(three.data)).toEqual([ahead.id, withinHour.id, early.id])
    expect(three.more).toBe(false)
    // Asked from the newest, nothing is new, and the position stays.
    const none = await listArrivedEvents(db, businessId, { keptSince: ALL, since: decodePosition(all.newest)!, limit: 10 })
    expect(none).toEqual({ data: [], more: false, newest: all.newest })
    // The list's filters hold for the live view too.
    const filtered = await listArrivedEvents(db, businessId, { keptSince: new Date(at(30)), since, limit: 10 })
    expect(ids(filtered.data)).toEqual([ahead.id, early.id])
  })
})

describe('arrivalPosition', () => {
  const event = (receivedAt: string, id: string) =>
    toEventRecord({
      id,
      businessId: 'b',
      keyId: 'k',
      origin: null,
      eventType: 'page_view',
      url: null,
      referrer: null,
      anonymousId: null,
      personId: null,
      properties: {},
      occurredAt: new Date(0),
      receivedAt: new Date(receivedAt),
    })

  test('after the latest arrival among the shown events, by (receivedAt, id); none shown: now', () => {
    const a = event('2026-03-01T10:00:01.000Z', '00000000-0000-7000-8000-00000000000b')
    const b = event('2026-03-01T10:00:02.000Z', '00000000-0000-7000-8000-00000000000a')
    const c = event('2026-03-01T10:00:02.000Z', '00000000-0000-7000-8000-00000000000c')
    const now = new Date('2026-03-02T00:00:00.000Z')
    expect(arrivalPosition([a, b, c], now)).toBe(positionCursor(new Date(c.receivedAt), c.id))
    expect(arrivalPosition([c, b, a], now)).toBe(positionCursor(new Date(c.receivedAt), c.id))
    expect(arrivalPosition([b, a], now)).toBe(positionCursor(new Date(b.receivedAt), b.id))
    expect(arrivalPosition([a], now)).toBe(positionCursor(new Date(a.receivedAt), a.id))
    expect(arrivalPosition([], now)).toBe(positionCursor(now, '00000000-0000-0000-0000-000000000000'))
  })
})
