import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openDatabase, queryRows, sql, type Database } from '../../db/client.ts'
import { migrate } from '../../db/migrate.ts'
import { createApp } from '../../src/app.ts'
import { silentLogger } from '../../src/observability/log.ts'
import { serverBinaries, startOwnPostgres, type OwnPostgres } from '../support/pg-server.ts'
import { ADMIN_TOKEN, TEST_PASSWORD_COST } from '../support/service.ts'
import { waitUntil } from '../support/wait.ts'

// EVENTS_DATABASE_URL (docs/scaling.md, "A database for events"): the event store on a
// PostgreSQL of its own. Two servers of the test's own, each stopped in turn while the
// service answers over HTTP: the one that is down answers 503 for what needs it, the other
// keeps serving, and both come back. It builds its own servers and runs once in CI.
const binaries = serverBinaries()
if ('missing' in binaries && process.env.CI)
  throw new Error(`the events-database test needs PostgreSQL's server binaries in CI: ${binaries.missing}`)
if ('missing' in binaries) console.warn(`  events-database test skipped: ${binaries.missing}`)

const ORIGIN = 'https://shop.example.com'
/** The failover promise (docs/operations.md): back within 10 s of the server's return. */
const BACK_WITHIN_MS = 10_000

describe.skipIf('missing' in binaries)('the event store on a PostgreSQL of its own', () => {
  let serviceServer: OwnPostgres
  let eventsServer: OwnPostgres
  let database: Database
  let events: Database
  let service: ReturnType<typeof createApp>
  let base: string
  let businessId: string
  let publicKey: string
  let privateKey: string

  beforeAll(async () => {
    const bin = (binaries as { bin: string }).bin
    ;[serviceServer, eventsServer] = await Promise.all([startOwnPostgres(bin, 'keygate'), startOwnPostgres(bin, 'keygate_events')])
    database = await openDatabase({ databaseUrl: serviceServer.url, dataDir: '' })
    events = await openDatabase({ databaseUrl: eventsServer.url, dataDir: '' })
    await migrate(database, events)
    service = createApp({
      database,
      eventsDatabase: events,
      adminToken: ADMIN_TOKEN,
      logger: silentLogger,
      passwordCost: TEST_PASSWORD_COST,
      eventMaintenance: true,
      keyChanges: true,
      erasure: { settleMs: 0, retryDelayMs: 100 },
    })
    service.app.listen({ port: 0, hostname: '127.0.0.1' })
    base = `http://127.0.0.1:${service.app.server!.port}`
    const business = (await (await http.admin('/businesses', { body: { name: 'Apart' } })).json()) as { id: string }
    businessId = business.id
    const create = async (body: Record<string, unknown>) => {
      const created = await http.admin(`/businesses/${businessId}/keys`, { body: { createdBy: 'test', ...body } })
      const answer = (await created.json()) as { key: string }
      expect([created.status, answer]).toEqual([201, expect.objectContaining({ key: expect.any(String) })])
      return answer.key
    }
    publicKey = await create({ type: 'public', name: 'site', scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['shop.example.com'] })
    privateKey = await create({ type: 'private', name: 'server', scopes: ['ANALYTICS_READ', 'ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'] })
  }, 60_000)

  afterAll(async () => {
    await service?.app.server?.stop(true)
    await service?.drain()
    await Promise.allSettled([database?.close(), events?.close()])
    await Promise.allSettled([serviceServer?.destroy(), eventsServer?.destroy()])
  })

  /** A JSON request with a key (`/api/v0...`) or the operator token (`/admin/v0...`). */
  const send = (path: string, authorization: string, init: { body?: unknown; origin?: string } = {}) =>
    fetch(`${base}${path}`, {
      method: init.body === undefined ? 'GET' : 'POST',
      headers: {
        authorization,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(init.origin ? { origin: init.origin } : {}),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
  const http = {
    api: (path: string, key: string, init?: { body?: unknown; origin?: string }) => send(`/api/v0${path}`, `Bearer ${key}`, init),
    admin: (path: string, init?: { body?: unknown }) => send(`/admin/v0${path}`, `Bearer ${ADMIN_TOKEN}`, init),
  }
  const track = (eventType: string) => http.api('/analytics', publicKey, { origin: ORIGIN, body: { eventType, anonymousId: 'v1' } })
  const listTypes = async () => {
    const answer = await http.api('/analytics?limit=100', privateKey)
    return {
      status: answer.status,
      types: answer.status === 200 ? ((await answer.json()) as { data: { eventType: string }[] }).data.map((e) => e.eventType) : [],
    }
  }

  test("the events live on their own database, and nothing of them on the service's", async () => {
    expect((await track('before')).status).toBe(202)
    expect((await listTypes()).types).toEqual(['before'])
    const count = async (on: Database) =>
      (await queryRows<{ n: number }>(on.db, sql`select count(*)::int as n from analytics_events where business_id = ${businessId}`))[0]!.n
    expect(await count(events)).toBe(1)
    expect(await count(database)).toBe(0)
    expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ status: 'ready' })
  })

  test("the events' database stopped: tracking and reading events answer 503, keys, audience and the admin API keep answering 2xx; back within 10 s", async () => {
    await eventsServer.stop()
    // The first statement after the stop finds the connections gone; every answer is 503, never a 500.
    await waitUntil(async () => (await track('during')).status === 503, 'the answer', 10_000)
    const refused = await track('during')
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).not.toBeNull()
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unavailable')
    expect((await listTypes()).status).toBe(503)
    const ready = await fetch(`${base}/readyz`)
    expect(ready.status).toBe(503)
    expect(((await ready.json()) as { reason: string }).reason).toBe('the events database does not answer')
    // What needs only the service's database.
    expect((await http.api('/whoami', privateKey)).status).toBe(200)
    expect((await http.api('/audience/people', privateKey, { body: { email: 'ada@example.com', firstName: 'Ada' } })).status).toBe(200)
    expect((await http.admin(`/businesses/${businessId}/keys`)).status).toBe(200)
    expect((await http.admin('/businesses', { body: { name: 'Meanwhile' } })).status).toBe(201)

    await eventsServer.start()
    const restarted = performance.now()
    await waitUntil(async () => (await track('after')).status === 202, 'the answer', BACK_WITHIN_MS)
    expect(performance.now() - restarted).toBeLessThan(BACK_WITHIN_MS)
    expect((await listTypes()).types.sort()).toEqual(['after', 'before'])
    await waitUntil(async () => (await fetch(`${base}/readyz`)).status === 200, 'the answer', BACK_WITHIN_MS)
  }, 60_000)

  test("the service's database stopped: every keyed route answers 503 (keys live there), /readyz names it; back within 10 s, the events kept", async () => {
    await serviceServer.stop()
    await waitUntil(async () => (await http.api('/whoami', privateKey)).status === 503, 'the answer', 10_000)
    expect((await track('during')).status).toBe(503)
    expect((await http.admin('/businesses', { body: { name: 'Refused' } })).status).toBe(503)
    const ready = await fetch(`${base}/readyz`)
    expect(ready.status).toBe(503)
    expect(((await ready.json()) as { reason: string }).reason).toBe('the database does not answer')

    await serviceServer.start()
    const restarted = performance.now()
    await waitUntil(async () => (await http.api('/whoami', privateKey)).status === 200, 'the answer', BACK_WITHIN_MS)
    expect(performance.now() - restarted).toBeLessThan(BACK_WITHIN_MS)
    await waitUntil(async () => (await track('later')).status === 202, 'the answer', BACK_WITHIN_MS)
    expect((await listTypes()).types.sort()).toEqual(['after', 'before', 'later'])
  }, 60_000)

  test("an erasure on the two databases: the events deleted on theirs, the audit entry and the webhook event written once on the service's", async () => {
    const person = await http.api('/analytics', privateKey, { body: { eventType: 'personal', personId: 'p-1' } })
    expect(person.status).toBe(202)
    const asked = await http.api('/analytics/erasures', privateKey, { body: { personId: 'p-1' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    const status = async () => ((await (await http.api(`/analytics/erasures/${id}`, privateKey)).json()) as { status: string }).status
    await waitUntil(async () => (await status()) === 'done', 'the erasure to finish', 10_000)
    expect((await listTypes()).types).not.toContain('personal')
    const audited = await queryRows<{ n: number }>(
      database.db,
      sql`select count(*)::int as n from audit_entries where business_id = ${businessId} and action = 'analytics.erased'`,
    )
    const told = await queryRows<{ n: number }>(
      database.db,
      sql`select count(*)::int as n from webhook_events where business_id = ${businessId} and type = 'erasure.completed'`,
    )
    expect([audited[0]!.n, told[0]!.n]).toEqual([1, 1])
  }, 30_000)
})
