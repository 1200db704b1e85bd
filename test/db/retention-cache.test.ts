import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys, businesses } from '../../db/schema/index.ts'
import { createKeyStore } from '../../src/access/key-store.ts'
import { createRetention, type Retention } from '../../src/events/retention.ts'
import { testDatabase } from '../support/database.ts'
import { holdReads } from '../support/held-db.ts'

// The retention the page-view route asks for on every request: read
// once per business, never a query per request, and never a wait once it has been read.

const OPERATOR_DAYS = 400

/** The real database, with the reads of the businesses table counted. */
function countingReads(db: Db) {
  const counted = { reads: 0 }
  const handle = new Proxy(db, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (property !== 'select' || typeof value !== 'function') return value
      return (...args: unknown[]) => {
        counted.reads++
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return { db: handle, counted }
}

/** The days of what the cache answers, as it answers them: at once on a hit, else a promise. */
function daysFor(retention: Retention, businessId: string): number | Promise<number> {
  const kept = retention.keptFor(businessId)
  return kept instanceof Promise ? kept.then((k) => k.days) : kept.days
}

async function businessKeeping(days: number | null): Promise<string> {
  const { db } = await testDatabase()
  const [row] = await db.insert(businesses).values({ name: 'Shop', eventRetentionDays: days }).returning()
  return row!.id
}

/** A key of that business, stored under a digest of our own: the key store finds it by it. */
async function keyOf(businessId: string): Promise<string> {
  const { db } = await testDatabase()
  const hash = `digest-${crypto.randomUUID()}`
  await db.insert(apiKeys).values({ businessId, type: 'private', name: 'k', keyHash: hash, keyHint: 'sk_…', scopes: [], createdBy: 'test' })
  return hash
}

async function setDays(businessId: string, days: number | null): Promise<void> {
  const { db } = await testDatabase()
  await db.update(businesses).set({ eventRetentionDays: days }).where(eq(businesses.id, businessId))
}

describe('the retention cache', () => {
  test('200 concurrent first requests of a business share one read of its row', async () => {
    const businessId = await businessKeeping(30)
    const { db, counted } = countingReads((await testDatabase()).db)
    const retention = createRetention(db, OPERATOR_DAYS)
    const answers = await Promise.all(Array.from({ length: 200 }, () => daysFor(retention, businessId)))
    expect(new Set(answers)).toEqual(new Set([30]))
    expect(counted.reads).toBe(1)
    // Read, it answers at once, without a query.
    expect(daysFor(retention, businessId)).toBe(30)
    expect(counted.reads).toBe(1)
  })

  test('past its TTL the row is read again, once for all the requests waiting on it', async () => {
    const businessId = await businessKeeping(30)
    const { db, counted } = countingReads((await testDatabase()).db)
    let now = 0
    const retention = createRetention(db, OPERATOR_DAYS, { ttlMs: 10_000, clock: () => now })
    expect(await daysFor(retention, businessId)).toBe(30)
    await setDays(businessId, 7)
    now = 9_999
    expect(daysFor(retention, businessId)).toBe(30)
    expect(counted.reads).toBe(1)
    now = 10_000
    const answers = await Promise.all(Array.from({ length: 50 }, () => daysFor(retention, businessId)))
    expect(new Set(answers)).toEqual(new Set([7]))
    expect(counted.reads).toBe(2)
    expect(daysFor(retention, businessId)).toBe(7)
  })

  test('a change forgets the value at once, and a read begun before the change is not kept', async () => {
    const businessId = await businessKeeping(null)
    const held = holdReads((await testDatabase()).db)
    const retention = createRetention(held.db, OPERATOR_DAYS)
    // A read that has its row (null: the operator's 400) but has not answered when the change lands.
    const before = daysFor(retention, businessId)
    await held.read
    await setDays(businessId, 5)
    retention.forget(businessId)
    held.release()
    expect(await before).toBe(OPERATOR_DAYS)
    // It answered its own caller; the next request reads the row again.
    expect(await daysFor(retention, businessId)).toBe(5)
  })

  test("a business's own setting above the operator's is capped by it", async () => {
    const businessId = await businessKeeping(OPERATOR_DAYS)
    const retention = createRetention((await testDatabase()).db, 90)
    expect(await daysFor(retention, businessId)).toBe(90)
  })

  test("a key's load reads its business's retention in the same query: the first request waits for no second read", async () => {
    const businessId = await businessKeeping(30)
    const hash = await keyOf(businessId)
    const { db, counted } = countingReads((await testDatabase()).db)
    const retention = createRetention(db, OPERATOR_DAYS)
    const keys = createKeyStore(db, { beforeBusinessRead: retention.beforeOutsideRead })
    expect((await keys.resolve(hash))?.businessId).toBe(businessId)
    expect(counted.reads).toBe(1)
    // Answered at once, from what the key's query read.
    expect(daysFor(retention, businessId)).toBe(30)
    expect(counted.reads).toBe(1)
  })

  test('a key load begun before a retention change does not leave the old retention cached', async () => {
    const businessId = await businessKeeping(null)
    const hash = await keyOf(businessId)
    const held = holdReads((await testDatabase()).db)
    const retention = createRetention((await testDatabase()).db, OPERATOR_DAYS)
    const keys = createKeyStore(held.db, { beforeBusinessRead: retention.beforeOutsideRead })
    // The key's query has read the business row (null: the operator's 400), not yet answered.
    const loading = keys.resolve(hash)
    await held.read
    await setDays(businessId, 5)
    retention.forget(businessId)
    held.release()
    expect((await loading)?.businessId).toBe(businessId)
    // The retention comes from the row as it is now, not from the key's earlier read.
    expect(await daysFor(retention, businessId)).toBe(5)
  })

  test("what the key's query read is capped by the operator's retention too", async () => {
    const businessId = await businessKeeping(OPERATOR_DAYS)
    const hash = await keyOf(businessId)
    const retention = createRetention((await testDatabase()).db, 90)
    const keys = createKeyStore((await testDatabase()).db, { beforeBusinessRead: retention.beforeOutsideRead })
    await keys.resolve(hash)
    expect(daysFor(retention, businessId)).toBe(90)
  })
})
