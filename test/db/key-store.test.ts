import { describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { apiKeys } from '../../db/schema/index.ts'
import { hashKey } from '../../src/access/key-format.ts'
import { createKeyStore, storedRateLimit } from '../../src/access/key-store.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey, testService, type SeedKeyOptions } from '../support/service.ts'

// The key store of src/access/key-store.ts on the test database, without the app: what a
// loaded key holds, and when the store reads the database again (docs/api.md, "Calling
// the API"). Each test changes rows behind the store's back to see whether it read them.
const HOUR = 3_600_000

async function seeded(options: SeedKeyOptions = {}) {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const { key, record } = await seedKey(service, businessId, options)
  return { businessId, hash: hashKey(key), id: record.id }
}

async function rename(id: string, name: string): Promise<void> {
  const { db } = await testDatabase()
  await db.update(apiKeys).set({ name }).where(eq(apiKeys.id, id))
}

describe('the key store', () => {
  test('a public key is loaded with its scopes, compiled origins, no address list, its budget and expiry', async () => {
    const { db } = await testDatabase()
    const k = await seeded({
      type: 'public',
      scopes: ['ANALYTICS_WRITE'],
      allowedOrigins: ['example.com'],
      rateLimit: { limit: 7, windowSeconds: 30 },
      expiresAt: '2030-01-01T00:00:00.000Z',
    })
    const key = (await createKeyStore(db).resolve(k.hash))!
    expect(key).toMatchObject({
      id: k.id,
      businessId: k.businessId,
      type: 'public',
      allowedOrigins: ['example.com'],
      reportOnly: false,
      ips: null,
      ipReportOnly: false,
      revoked: false,
      expiresAt: Date.parse('2030-01-01T00:00:00Z'),
      rateLimit: { limit: 7, windowSeconds: 30 },
      lastUsedAt: null,
    })
    expect([...key.scopes]).toEqual(['ANALYTICS_WRITE'])
    expect(key.scopeList).toEqual(['ANALYTICS_WRITE'])
    expect(key.origins!.match('https://www.example.com')).toEqual({ allowed: true, entry: 'example.com' })
    expect(key.origins!.match('https://evil.example').allowed).toBe(false)
    await db.update(apiKeys).set({ originPolicy: 'report' }).where(eq(apiKeys.id, k.id))
    expect((await createKeyStore(db).resolve(k.hash))!.reportOnly).toBe(true)
  })

  test('a private key: no origins, its address list compiled, its report policy, revocation and last use as stored', async () => {
    const { db } = await testDatabase()
    const k = await seeded({ type: 'private', scopes: ['ANALYTICS_READ'] })
    await db
      .update(apiKeys)
      .set({
        allowedIps: ['192.0.2.0/24'],
        ipPolicy: 'report',
        revokedAt: new Date('2026-01-02T00:00:00Z'),
        lastUsedAt: new Date('2026-01-01T00:00:00Z'),
      })
      .where(eq(apiKeys.id, k.id))
    const key = (await createKeyStore(db).resolve(k.hash))!
    expect(key).toMatchObject({
      type: 'private',
      origins: null,
      reportOnly: false,
      ipReportOnly: true,
      revoked: true,
      rateLimit: null,
      expiresAt: null,
    })
    expect(key.lastUsedAt).toBe(Date.parse('2026-01-01T00:00:00Z'))
    expect(key.ips!.allows('192.0.2.7')).toBe(true)
    expect(key.ips!.allows('198.51.100.1')).toBe(false)
  })

  test("a key's own budget needs both columns", () => {
    expect(storedRateLimit({ rateLimitLimit: 5, rateLimitWindowSeconds: 60 })).toEqual({ limit: 5, windowSeconds: 60 })
    expect(storedRateLimit({ rateLimitLimit: 5, rateLimitWindowSeconds: null })).toBeNull()
    expect(storedRateLimit({ rateLimitLimit: null, rateLimitWindowSeconds: 60 })).toBeNull()
    expect(storedRateLimit({ rateLimitLimit: null, rateLimitWindowSeconds: null })).toBeNull()
  })

  test('live: a loaded key is answered from the cache (by default), and read again after invalidate or flush', async () => {
    const { db } = await testDatabase()
    const k = await seeded()
    const store = createKeyStore(db, { mode: 'live' })
    expect(store.mode).toBe('live')
    expect((await store.resolve(k.hash))!.name).toBe('public key')
    await rename(k.id, 'renamed')
    expect((await store.resolve(k.hash))!.name).toBe('public key')
    expect({ ...store.stats }).toEqual({ hit: 1, negative: 0, miss: 1 })
    store.invalidate(k.hash)
    expect((await store.resolve(k.hash))!.name).toBe('renamed')
    await rename(k.id, 'again')
    store.flush()
    expect((await store.resolve(k.hash))!.name).toBe('again')
    expect({ ...store.stats }).toEqual({ hit: 1, negative: 0, miss: 3 })
  })

  test('fallback (the mode at start): a key is trusted only for fallbackTtlMs; live for ttlMs', async () => {
    const { db } = await testDatabase()
    const k = await seeded()
    const store = createKeyStore(db, { ttlMs: HOUR, fallbackTtlMs: 0 })
    expect(store.mode).toBe('fallback')
    await store.resolve(k.hash)
    await rename(k.id, 'renamed')
    expect((await store.resolve(k.hash))!.name).toBe('renamed')
    store.setMode('live')
    expect(store.mode).toBe('live')
    await rename(k.id, 'again')
    expect((await store.resolve(k.hash))!.name).toBe('again')
    await rename(k.id, 'unseen')
    expect((await store.resolve(k.hash))!.name).toBe('again')
    expect({ ...store.stats }).toEqual({ hit: 1, negative: 0, miss: 3 })
  })

  test('an unknown digest is remembered for unknownTtlMs, then read again', async () => {
    const { db } = await testDatabase()
    const k = await seeded()
    const unknown = hashKey('pk_not_a_key_of_this_database_0000')
    const store = createKeyStore(db, { mode: 'live', unknownTtlMs: HOUR })
    expect(await store.resolve(unknown)).toBeNull()
    expect(await store.resolve(unknown)).toBeNull()
    expect({ ...store.stats }).toEqual({ hit: 0, negative: 1, miss: 1 })
    // Remembered as unknown: a key that appears meanwhile is found after its invalidation only.
    const again = createKeyStore(db, { mode: 'live', unknownTtlMs: 0 })
    expect(await again.resolve(k.hash.replace(/.$/, (c) => (c === '0' ? '1' : '0')))).toBeNull()
    expect(await again.resolve(k.hash.replace(/.$/, (c) => (c === '0' ? '1' : '0')))).toBeNull()
    expect({ ...again.stats }).toEqual({ hit: 0, negative: 0, miss: 2 })
  })

  test('concurrent misses share one read, told once to beforeBusinessRead with the business row; a read that a change overtook is not cached', async () => {
    const { db } = await testDatabase()
    const k = await seeded()
    await db.execute(sql`update businesses set event_retention_days = 30 where id = ${k.businessId}`)
    const told: [string, number | null][] = []
    let reads = 0
    const store = createKeyStore(db, {
      mode: 'live',
      beforeBusinessRead: () => {
        reads++
        return (businessId, retention) => void told.push([businessId, retention.eventRetentionDays])
      },
    })
    const [a, b] = await Promise.all([store.resolve(k.hash), store.resolve(k.hash)])
    expect(a).toBe(b)
    expect(reads).toBe(1)
    expect(told).toEqual([[k.businessId, 30]])
    // An unknown digest is read, but there is no business to tell.
    await store.resolve(hashKey('sk_unknown_to_the_store_000000000'))
    expect(told).toHaveLength(1)

    // A load in flight when the key changes answers its request, and is not kept.
    const other = await seeded()
    const inFlight = store.resolve(other.hash)
    store.invalidate(other.hash)
    expect((await inFlight)!.id).toBe(other.id)
    await rename(other.id, 'after the change')
    expect((await store.resolve(other.hash))!.name).toBe('after the change')
    // Nor one in flight across a flush.
    const fourth = await seeded()
    const flushed = store.resolve(fourth.hash)
    store.flush()
    expect((await flushed)!.id).toBe(fourth.id)
    await rename(fourth.id, 'after the flush')
    expect((await store.resolve(fourth.hash))!.name).toBe('after the flush')
    // Nor one in flight across a change and a flush (each moves the store past the load).
    const third = await seeded()
    const across = store.resolve(third.hash)
    store.invalidate(third.hash)
    store.flush()
    expect((await across)!.id).toBe(third.id)
    await rename(third.id, 'after both')
    expect((await store.resolve(third.hash))!.name).toBe('after both')
  })
})
