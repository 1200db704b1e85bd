import { describe, expect, test } from 'bun:test'
import type { Db } from '../../db/client.ts'
import { createRetention, effectiveDays, keptSince, type RetentionColumns } from '../../src/events/retention.ts'
import { DAY_MS } from '../../src/events/time-bounds.ts'

// A business's retention (docs/api.md, "Retention") over a business table held in a Map:
// what is kept, for how long the ingestion cache trusts it, and what a change does to it.
// test/db/retention-cache.test.ts runs the cache on a real database.

const OPERATOR_DAYS = 400

/**
 * The select `createRetention` makes (`select ... from ... where ... limit 1`), answered
 * from `rows` when the test calls `answer()`, so a test can act while a read is in flight.
 */
function fakeBusinesses() {
  const rows = new Map<string, RetentionColumns>()
  const pending: (() => void)[] = []
  let reads = 0
  let businessId = ''
  const query = {
    from: () => query,
    where: (condition: unknown) => {
      businessId = boundValue(condition)
      return query
    },
    limit: () => {
      reads++
      const id = businessId
      return new Promise<RetentionColumns[]>((resolve) => {
        pending.push(() => {
          const row = rows.get(id)
          resolve(row === undefined ? [] : [{ ...row }])
        })
      })
    },
  }
  const db = { select: () => query } as unknown as Db
  return {
    db,
    rows,
    reads: () => reads,
    /** Answers every read in flight, with the rows as they are now. */
    async answer() {
      for (const answer of pending.splice(0)) answer()
      await Promise.resolve()
    },
    /** Answers the oldest read in flight alone. */
    answerFirst() {
      pending.shift()?.()
    },
  }
}

/** The business id an `eq(businesses.id, id)` carries (Drizzle's SQL chunks hold the bound Param). */
function boundValue(condition: unknown): string {
  const chunks = (condition as { queryChunks: unknown[] }).queryChunks
  const param = chunks.find((chunk) => typeof chunk === 'object' && chunk !== null && 'value' in chunk && 'encoder' in chunk)
  return (param as { value: string }).value
}

/** Starts `promise` and answers the reads it makes. */
async function answered<T>(store: ReturnType<typeof fakeBusinesses>, promise: Promise<T>): Promise<T> {
  await Promise.resolve()
  await store.answer()
  return promise
}

describe('effectiveDays and keptSince', () => {
  test("the business's own days, capped by the operator's; none: the operator's", () => {
    expect(effectiveDays(30, 400)).toBe(30)
    expect(effectiveDays(500, 400)).toBe(400)
    expect(effectiveDays(400, 400)).toBe(400)
    expect(effectiveDays(null, 90)).toBe(90)
  })

  test('the later of `days` before now and the instant a lowered retention left', () => {
    const now = Date.UTC(2026, 10, 28)
    expect(keptSince({ days: 30, expiredBefore: null }, now)).toBe(now - 30 * DAY_MS)
    expect(keptSince({ days: 30, expiredBefore: now - 10 * DAY_MS }, now)).toBe(now - 10 * DAY_MS)
    expect(keptSince({ days: 30, expiredBefore: now - 40 * DAY_MS }, now)).toBe(now - 30 * DAY_MS)
  })
})

describe('createRetention', () => {
  test("keptFor answers the business's row: its days and the instant before which its events are gone; an unknown business keeps the operator's days", async () => {
    const store = fakeBusinesses()
    const expired = new Date(Date.UTC(2026, 0, 1))
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: expired })
    store.rows.set('b2', { eventRetentionDays: 900, eventsExpiredBefore: null })
    const retention = createRetention(store.db, OPERATOR_DAYS)
    expect(retention.operatorDays).toBe(OPERATOR_DAYS)
    expect(await answered(store, retention.keptFor('b1'))).toEqual({ days: 30, expiredBefore: expired.getTime() })
    expect(await answered(store, retention.keptFor('b2'))).toEqual({ days: OPERATOR_DAYS, expiredBefore: null })
    expect(await answered(store, retention.keptFor('nobody'))).toEqual({ days: OPERATOR_DAYS, expiredBefore: null })
  })

  test('a read value is trusted for ttlMs (10 s by default) and read again from then on', async () => {
    const store = fakeBusinesses()
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    let now = 1_000
    const retention = createRetention(store.db, OPERATOR_DAYS, { clock: () => now })
    expect((await answered(store, retention.keptFor('b1'))).days).toBe(30)
    store.rows.set('b1', { eventRetentionDays: 7, eventsExpiredBefore: null })
    now = 10_999
    expect((await answered(store, retention.keptFor('b1'))).days).toBe(30)
    expect(store.reads()).toBe(1)
    now = 11_000
    expect((await answered(store, retention.keptFor('b1'))).days).toBe(7)
    expect(store.reads()).toBe(2)
  })

  test('requests that come while a read is in flight share it; the next read begins once it is done', async () => {
    const store = fakeBusinesses()
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    let now = 0
    const retention = createRetention(store.db, OPERATOR_DAYS, { ttlMs: 100, clock: () => now })
    const first = [retention.keptFor('b1'), retention.keptFor('b1'), retention.keptFor('b1')]
    await Promise.resolve()
    expect(store.reads()).toBe(1)
    await store.answer()
    expect((await Promise.all(first)).map((k) => k.days)).toEqual([30, 30, 30])
    now = 100
    const again = retention.keptFor('b1')
    await Promise.resolve()
    expect(store.reads()).toBe(2)
    await store.answer()
    expect((await again).days).toBe(30)
  })

  test('forget drops the cached value: the next request reads the row again', async () => {
    const store = fakeBusinesses()
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    const retention = createRetention(store.db, OPERATOR_DAYS, { clock: () => 0 })
    await answered(store, retention.keptFor('b1'))
    store.rows.set('b1', { eventRetentionDays: 7, eventsExpiredBefore: null })
    retention.forget('b1')
    expect((await answered(store, retention.keptFor('b1'))).days).toBe(7)
    expect(store.reads()).toBe(2)
  })

  test('a read in flight when the retention changes answers its callers but is not kept, and later requests do not join it', async () => {
    const store = fakeBusinesses()
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    const retention = createRetention(store.db, OPERATOR_DAYS, { clock: () => 0 })
    const before = retention.keptFor('b1')
    await Promise.resolve()
    retention.forget('b1')
    // A request after the change starts its own read.
    const after = retention.keptFor('b1')
    await Promise.resolve()
    expect(store.reads()).toBe(2)
    await store.answer()
    await Promise.all([before, after])
    // The read that began after the change was kept; the earlier one did not overwrite it.
    store.rows.set('b1', { eventRetentionDays: 7, eventsExpiredBefore: null })
    expect((await answered(store, retention.keptFor('b1'))).days).toBe(30)
    expect(store.reads()).toBe(2)
  })

  test('a stale read finishing after a new one began does not end the new one for later requests', async () => {
    const store = fakeBusinesses()
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    const retention = createRetention(store.db, OPERATOR_DAYS, { clock: () => 0 })
    const stale = retention.keptFor('b1')
    await Promise.resolve()
    retention.forget('b1')
    const fresh = retention.keptFor('b1')
    await Promise.resolve()
    expect(store.reads()).toBe(2)
    store.answerFirst()
    await stale
    // Not kept (it began before the change), and the new read still in flight: a request joins it.
    const third = retention.keptFor('b1')
    await Promise.resolve()
    expect(store.reads()).toBe(2)
    await store.answer()
    expect((await Promise.all([fresh, third])).map((k) => k.days)).toEqual([30, 30])
  })

  test('beforeOutsideRead: a row read elsewhere fills the cache, unless the retention changed since the read began', async () => {
    const store = fakeBusinesses()
    const retention = createRetention(store.db, OPERATOR_DAYS, { clock: () => 0 })
    retention.beforeOutsideRead()('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    expect((await answered(store, retention.keptFor('b1'))).days).toBe(30)
    expect(store.reads()).toBe(0)
    const answer = retention.beforeOutsideRead()
    retention.forget('b2')
    answer('b2', { eventRetentionDays: 5, eventsExpiredBefore: null })
    store.rows.set('b2', { eventRetentionDays: 9, eventsExpiredBefore: null })
    expect((await answered(store, retention.keptFor('b2'))).days).toBe(9)
    expect(store.reads()).toBe(1)
  })

  test('readableSince reads the row every time (never the cache) and answers the later bound at `now`', async () => {
    const store = fakeBusinesses()
    const now = Date.UTC(2026, 10, 28)
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: null })
    const retention = createRetention(store.db, OPERATOR_DAYS, { clock: () => 0 })
    await answered(store, retention.keptFor('b1'))
    store.rows.set('b1', { eventRetentionDays: 30, eventsExpiredBefore: new Date(now - 5 * DAY_MS) })
    expect(await answered(store, retention.readableSince('b1', now))).toEqual(new Date(now - 5 * DAY_MS))
    store.rows.set('b1', { eventRetentionDays: 2, eventsExpiredBefore: null })
    expect(await answered(store, retention.readableSince('b1', now))).toEqual(new Date(now - 2 * DAY_MS))
    expect(await answered(store, retention.readableSince('nobody', now))).toEqual(new Date(now - OPERATOR_DAYS * DAY_MS))
    expect(store.reads()).toBe(4)
  })
})
