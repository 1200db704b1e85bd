import { afterAll, describe, expect, test } from 'bun:test'
import { openDatabase, sql, type Database } from '../../db/client.ts'
import { hashKey } from '../../src/access/key-format.ts'
import { feedKeyChanges, type KeyChangeFeedOptions } from '../../src/access/key-invalidation.ts'
import { createKeyStore, type ActiveKey } from '../../src/access/key-store.ts'
import { createApp, type Service } from '../../src/app.ts'
import { silentLogger } from '../../src/observability/log.ts'
import { testDatabase, testDatabaseUrl } from '../support/database.ts'
import { holdReads } from '../support/held-db.ts'
import { admin, ADMIN_TOKEN, call, seedBusiness, seedKey } from '../support/service.ts'

// A key changed through any instance is refused or applied by every
// instance within 1 s. Two instances here are two createApp, each on a postgres.js pool
// of its own with its own notification connection, over the run's PostgreSQL.

const databaseUrl = await testDatabaseUrl()
const ORIGIN = 'https://www.example.com'
const opened: Database[] = []
const services: Service[] = []

afterAll(async () => {
  for (const service of services) await service.drain()
  for (const database of opened) await database.close()
})

async function instance(feed: KeyChangeFeedOptions = {}): Promise<Service> {
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', maxConnections: 4 })
  opened.push(database)
  const service = createApp({ database, adminToken: ADMIN_TOKEN, logger: silentLogger, keyChanges: feed })
  services.push(service)
  await until(() => service.services.keyFeed!.live, 'the notification connection to listen')
  return service
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<number> {
  const started = performance.now()
  while (!(await condition())) {
    if (performance.now() - started > timeoutMs) throw new Error(`waited ${timeoutMs} ms for ${what}`)
    await Bun.sleep(5)
  }
  return performance.now() - started
}

/** Polls `service` with real requests until `accepted` holds of an answer; the time it took, in ms. */
async function appliedWithin(what: string, request: () => Promise<Response>, accepted: (r: Response) => boolean | Promise<boolean>) {
  const ms = await until(async () => accepted(await request()), what, 5_000)
  console.log(`  ${what}: applied by the other instance after ${ms.toFixed(1)} ms`)
  return ms
}

const codeIs = (code: string) => async (response: Response) =>
  ((await response.json()) as { error?: { code?: string } }).error?.code === code

describe.if(Boolean(databaseUrl))('two instances over one PostgreSQL', () => {
  async function pair() {
    const [a, b] = [await instance(), await instance()]
    const businessId = await seedBusiness(a)
    return { a, b, businessId }
  }

  test('a revocation through one instance is refused by the other within 1 s', async () => {
    const { a, b, businessId } = await pair()
    const { key, record } = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key, origin: ORIGIN })).status).toBe(200)
    expect((await admin(a, `/keys/${record.id}`, { method: 'DELETE' })).status).toBe(204)
    const ms = await appliedWithin('revocation', () => call(b, '/api/v0/whoami', { key, origin: ORIGIN }), codeIs('invalid_api_key'))
    expect(ms).toBeLessThan(1_000)
  })

  test('a leaked key reported through one instance is refused by the other within 1 s', async () => {
    const { a, b, businessId } = await pair()
    const { key } = await seedKey(a, businessId, { type: 'private' })
    expect((await call(b, '/api/v0/whoami', { key })).status).toBe(200)
    const reported = await call(a, '/security/leaked-keys', { method: 'POST', body: { keys: [key], url: 'https://github.com/acme/site' } })
    expect(reported.status).toBe(202)
    const ms = await appliedWithin('leak report', () => call(b, '/api/v0/whoami', { key }), codeIs('invalid_api_key'))
    expect(ms).toBeLessThan(1_000)
  })

  test('a roll through one instance: the old key keeps working on the other through the grace; grace 0 ends it there within 1 s', async () => {
    const { a, b, businessId } = await pair()
    const graced = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key: graced.key, origin: ORIGIN })).status).toBe(200)
    const rolled = await admin(a, `/keys/${graced.record.id}/roll`, { body: { graceSeconds: 3600 } })
    expect(rolled.status).toBe(201)
    const { key: newKey } = (await rolled.json()) as { key: string }
    expect((await call(b, '/api/v0/whoami', { key: newKey, origin: ORIGIN })).status).toBe(200)
    expect((await call(b, '/api/v0/whoami', { key: graced.key, origin: ORIGIN })).status).toBe(200)

    const ended = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key: ended.key, origin: ORIGIN })).status).toBe(200)
    expect((await admin(a, `/keys/${ended.record.id}/roll`, { body: { graceSeconds: 0 } })).status).toBe(201)
    const ms = await appliedWithin(
      'roll with grace 0',
      () => call(b, '/api/v0/whoami', { key: ended.key, origin: ORIGIN }),
      codeIs('expired_api_key'),
    )
    expect(ms).toBeLessThan(1_000)
  })

  test('a PATCH of allowedOrigins through one instance is applied by the other within 1 s', async () => {
    const { a, b, businessId } = await pair()
    const { key, record } = await seedKey(a, businessId, { allowedOrigins: ['example.com'] })
    expect((await call(b, '/api/v0/whoami', { key, origin: ORIGIN })).status).toBe(200)
    const patched = await admin(a, `/keys/${record.id}`, { method: 'PATCH', body: { allowedOrigins: ['example.org'] } })
    expect(patched.status).toBe(200)
    const ms = await appliedWithin('origins', () => call(b, '/api/v0/whoami', { key, origin: ORIGIN }), codeIs('origin_not_allowed'))
    expect(ms).toBeLessThan(1_000)
    expect((await call(b, '/api/v0/whoami', { key, origin: 'https://example.org' })).status).toBe(200)
  })

  test('a PATCH of scopes through one instance is applied by the other within 1 s', async () => {
    const { a, b, businessId } = await pair()
    const { key, record } = await seedKey(a, businessId, { type: 'private', scopes: ['MEMORY_READ', 'ANALYTICS_READ'] })
    expect((await call(b, '/api/v0/memory', { key })).status).toBe(200)
    const patched = await admin(a, `/keys/${record.id}`, { method: 'PATCH', body: { scopes: ['ANALYTICS_READ'] } })
    expect(patched.status).toBe(200)
    const ms = await appliedWithin('scopes', () => call(b, '/api/v0/memory', { key }), codeIs('insufficient_scope'))
    expect(ms).toBeLessThan(1_000)
  })

  test('a PATCH of expiresAt through one instance is applied by the other within 1 s', async () => {
    // The other instance's clock runs a day ahead, so the new expiry (in the future for the
    // admin API) has passed for it as soon as it knows of it.
    const [a] = [await instance()]
    const database = await openDatabase({ databaseUrl, dataDir: 'memory://', maxConnections: 4 })
    opened.push(database)
    const b = createApp({ database, adminToken: ADMIN_TOKEN, logger: silentLogger, keyChanges: true, now: () => Date.now() + 86_400_000 })
    services.push(b)
    await until(() => b.services.keyFeed!.live, 'the notification connection to listen')
    const businessId = await seedBusiness(a)
    const { key, record } = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key, origin: ORIGIN })).status).toBe(200)
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString()
    expect((await admin(a, `/keys/${record.id}`, { method: 'PATCH', body: { expiresAt } })).status).toBe(200)
    const ms = await appliedWithin('expiresAt', () => call(b, '/api/v0/whoami', { key, origin: ORIGIN }), codeIs('expired_api_key'))
    expect(ms).toBeLessThan(1_000)
  })

  test('a key created through one instance works on the other at once', async () => {
    const { a, b, businessId } = await pair()
    const created = await admin(a, `/businesses/${businessId}/keys`, {
      body: { type: 'public', name: 'site', scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'], createdBy: 'ops' },
    })
    const { key } = (await created.json()) as { key: string }
    const ms = await appliedWithin(
      'creation',
      () => call(b, '/api/v0/whoami', { key, origin: ORIGIN }),
      (r) => r.status === 200,
    )
    expect(ms).toBeLessThan(1_000)
  })

  test('while the notification connection is cut, keys are re-read after the short TTL; it reconnects and listens again', async () => {
    const a = await instance()
    // A slow reconnection leaves a window in which the other instance cannot hear of changes.
    const b = await instance({ reconnectDelayMs: 4_000 })
    const feed = b.services.keyFeed!
    const businessId = await seedBusiness(a)
    const { key, record } = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key, origin: ORIGIN })).status).toBe(200)
    expect(b.services.keyStore.mode).toBe('live')

    const { db } = await testDatabase()
    await db.execute(sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${feed.applicationName}`)
    await until(() => !feed.live, 'the cut to be noticed')
    expect(b.services.keyStore.mode).toBe('fallback')
    // Read again after the cut, so cached under the short TTL; then revoked with nobody listening on b.
    expect((await call(b, '/api/v0/whoami', { key, origin: ORIGIN })).status).toBe(200)
    expect((await admin(a, `/keys/${record.id}`, { method: 'DELETE' })).status).toBe(204)
    const ms = await appliedWithin(
      'revocation without notifications',
      () => call(b, '/api/v0/whoami', { key, origin: ORIGIN }),
      codeIs('invalid_api_key'),
    )
    expect(ms).toBeLessThan(1_000)
    expect(feed.live).toBe(false)

    await until(() => feed.live, 'the notification connection to come back')
    expect(b.services.keyStore.mode).toBe('live')
    // Live again: a change reaches b through a notification, not the (now long) TTL.
    const second = await seedKey(a, businessId)
    expect((await call(b, '/api/v0/whoami', { key: second.key, origin: ORIGIN })).status).toBe(200)
    expect((await admin(a, `/keys/${second.record.id}`, { method: 'DELETE' })).status).toBe(204)
    const again = await appliedWithin(
      'revocation after reconnecting',
      () => call(b, '/api/v0/whoami', { key: second.key, origin: ORIGIN }),
      codeIs('invalid_api_key'),
    )
    expect(again).toBeLessThan(1_000)
  })

  /** Another instance's key store, reading through a database whose answers are held until released, with its own notification connection. */
  async function heldStore() {
    const database = await openDatabase({ databaseUrl, dataDir: 'memory://', maxConnections: 2 })
    opened.push(database)
    const held = holdReads(database.db)
    const store = createKeyStore(held.db)
    const notified: string[] = []
    const feed = feedKeyChanges(
      database,
      {
        ...store,
        get mode() {
          return store.mode
        },
        invalidate(digest) {
          store.invalidate(digest)
          notified.push(digest)
        },
      },
      silentLogger,
    )
    await until(() => feed.live, 'the notification connection to listen')
    return { store, held, feed, notified }
  }

  async function revokedKey() {
    const a = await instance()
    const businessId = await seedBusiness(a)
    const { key, record } = await seedKey(a, businessId)
    return { hash: hashKey(key), revoke: async () => expect((await admin(a, `/keys/${record.id}`, { method: 'DELETE' })).status).toBe(204) }
  }

  test('a notification arriving while a load is in flight keeps that load from caching the old record', async () => {
    const { hash, revoke } = await revokedKey()
    const { store, held, feed, notified } = await heldStore()
    try {
      const inFlight = store.resolve(hash) as Promise<ActiveKey | null>
      await held.read // the row is read, not revoked yet; the answer is held
      await revoke()
      await until(() => notified.includes(hash), 'the notification')
      held.release()
      expect((await inFlight)!.revoked).toBe(false) // answered to the request that started before the change
      const next = store.resolve(hash)
      expect((next instanceof Promise ? await next : next)!.revoked).toBe(true)
    } finally {
      held.release()
      await feed.close()
    }
  })

  test('a lookup after a notification does not join a load that started before it', async () => {
    const { hash, revoke } = await revokedKey()
    const { store, held, feed, notified } = await heldStore()
    try {
      const inFlight = store.resolve(hash) as Promise<ActiveKey | null>
      await held.read
      await revoke()
      await until(() => notified.includes(hash), 'the notification')
      const after = store.resolve(hash)
      expect(after).not.toBe(inFlight)
      held.release()
      expect((await after)!.revoked).toBe(true)
    } finally {
      held.release()
      await feed.close()
    }
  })
})
