import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys } from '../../db/schema/index.ts'
import type { ActiveKey } from '../../src/access/key-store.ts'
import { createLastUsedRecorder, LAST_USED_RESOLUTION_MS } from '../../src/access/last-used.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'

// The last-used recorder of src/access/last-used.ts on the test database, without the app's
// scheduler: the test flushes. `lastUsedAt` is kept to the minute (docs/api.md, "Keys"):
// written once per key and minute, never moved back.
const T0 = Date.UTC(2026, 0, 5, 12)
const MINUTE = LAST_USED_RESOLUTION_MS

async function keys(count: number): Promise<ActiveKey[]> {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const made: ActiveKey[] = []
  for (let i = 0; i < count; i++) {
    const { record } = await seedKey(service, businessId, { type: 'private', name: `key ${i}` })
    // The recorder reads only the id and the lastUsedAt the key was loaded with.
    made.push({ id: record.id, lastUsedAt: null } as ActiveKey)
  }
  return made
}

async function stored(key: ActiveKey): Promise<number | null> {
  const { db } = await testDatabase()
  const [row] = await db.select({ at: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, key.id))
  return row!.at === null ? null : row!.at.getTime()
}

/** `db` with its first `failures` statements refused, as a database that went away for a moment. */
function failingFirst(db: Db, failures: number): Db {
  let left = failures
  return {
    execute: (query: Parameters<Db['execute']>[0]) => (left-- > 0 ? Promise.reject(new Error('refused by the test')) : db.execute(query)),
  } as unknown as Db
}

describe('last used', () => {
  test('a use is written at its time by the next flush, one statement for every key queued', async () => {
    const { db } = await testDatabase()
    const [a, b] = await keys(2)
    const recorder = createLastUsedRecorder(db)
    recorder.touch(a!, T0)
    recorder.touch(b!, T0 + 5)
    expect(await stored(a!)).toBeNull()
    await recorder.flush()
    expect([await stored(a!), await stored(b!)]).toEqual([T0, T0 + 5])
    expect(recorder.stats).toMatchObject({ written: 2, failures: 0, dropped: 0, waiting: 0 })
    // Nothing queued: a flush writes nothing.
    await recorder.flushDue()
    expect(recorder.stats.written).toBe(2)
  })

  test('a key is queued again only more than a minute after its last noted use', async () => {
    const { db } = await testDatabase()
    const [key] = await keys(1)
    const recorder = createLastUsedRecorder(db)
    recorder.touch(key!, T0)
    await recorder.flushDue()
    expect(recorder.stats.written).toBe(1)
    recorder.touch(key!, T0 + 1)
    recorder.touch(key!, T0 + MINUTE)
    await recorder.flushDue()
    expect(recorder.stats.written).toBe(1)
    expect(await stored(key!)).toBe(T0)
    recorder.touch(key!, T0 + MINUTE + 1)
    await recorder.flushDue()
    expect(recorder.stats.written).toBe(2)
    expect(await stored(key!)).toBe(T0 + MINUTE + 1)
  })

  test("a key loaded with a lastUsedAt is not queued within a minute of it; the minute counts from the key's time when none was noted here", async () => {
    const { db } = await testDatabase()
    const [key] = await keys(1)
    const loaded = { ...key!, lastUsedAt: T0 } as ActiveKey
    const recorder = createLastUsedRecorder(db)
    recorder.touch(loaded, T0 + MINUTE)
    await recorder.flush()
    expect(recorder.stats.written).toBe(0)
    expect(await stored(key!)).toBeNull()
    recorder.touch(loaded, T0 + MINUTE + 1)
    await recorder.flush()
    expect(await stored(key!)).toBe(T0 + MINUTE + 1)
    // The cached key is never written to.
    expect(loaded.lastUsedAt).toBe(T0)
  })

  test('the stored time never moves back, nor forward by a minute or less: another instance may have written a later use', async () => {
    const { db } = await testDatabase()
    const [key] = await keys(1)
    const first = createLastUsedRecorder(db)
    first.touch(key!, T0 + 2 * MINUTE)
    await first.flush()
    // A second instance that saw an earlier use, then one within the minute after the stored one.
    const second = createLastUsedRecorder(db)
    second.touch(key!, T0)
    await second.flush()
    expect(await stored(key!)).toBe(T0 + 2 * MINUTE)
    const third = createLastUsedRecorder(db)
    third.touch(key!, T0 + 3 * MINUTE)
    await third.flush()
    expect(await stored(key!)).toBe(T0 + 2 * MINUTE)
    const fourth = createLastUsedRecorder(db)
    fourth.touch(key!, T0 + 3 * MINUTE + 1)
    await fourth.flush()
    expect(await stored(key!)).toBe(T0 + 3 * MINUTE + 1)
  })

  test('close writes what is queued; the interval is 1 s unless given', async () => {
    const { db } = await testDatabase()
    const [key] = await keys(1)
    const recorder = createLastUsedRecorder(db)
    expect(recorder.intervalMs).toBe(1_000)
    expect(createLastUsedRecorder(db, { flushIntervalMs: 250 }).intervalMs).toBe(250)
    recorder.touch(key!, T0)
    await recorder.close()
    expect(await stored(key!)).toBe(T0)
  })

  test('a failed write is told to onError and waits for its retry: the scheduled round leaves it until due, flush() and close() write it at once', async () => {
    const { db } = await testDatabase()
    const [a, b] = await keys(2)
    // A retry an hour away: never due while the test runs.
    const retry = { retryDelayMs: 3_600_000 }
    const errors: unknown[] = []
    const recorder = createLastUsedRecorder(failingFirst(db, 1), { retry, onError: (error) => errors.push(error) })
    recorder.touch(a!, T0)
    await recorder.flushDue()
    expect(errors).toEqual([new Error('refused by the test')])
    expect(recorder.stats).toMatchObject({ written: 0, failures: 1, waiting: 1 })
    await recorder.flushDue()
    expect(await stored(a!)).toBeNull()
    await recorder.flush()
    expect(await stored(a!)).toBe(T0)
    expect(recorder.stats).toMatchObject({ written: 1, failures: 1, waiting: 0 })

    const closing = createLastUsedRecorder(failingFirst(db, 1), { retry })
    closing.touch(b!, T0)
    await closing.flushDue()
    expect(await stored(b!)).toBeNull()
    await closing.close()
    expect(await stored(b!)).toBe(T0)
  })
})
