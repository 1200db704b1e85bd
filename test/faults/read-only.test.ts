import { afterEach, describe, expect, test } from 'bun:test'
import { openDatabase, queryRows, sql, type Database } from '../../db/client.ts'
import { createApp, type Service } from '../../src/app.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { createLogger } from '../../src/observability/log.ts'
import { testDatabase, testDatabaseUrl } from '../support/database.ts'
import { ADMIN_TOKEN, seedBusiness, seedKey, testService } from '../support/service.ts'
import { waitUntil } from '../support/wait.ts'

// A server that answers but takes no writes: a standby, or a primary set read-only during
// a failover. Here the test's own sessions are read-only
// (default_transaction_read_only=on in the URL, as a server setting would make them), so
// the shared database stays writable for everyone else. The service must answer 503 with
// Retry-After, never 500; not be ready; and end its pool's sessions on that server, so
// that its connections look for the primary again. PGlite has no server to fail over:
// this runs in the PostgreSQL pass only.
const databaseUrl = await testDatabaseUrl()
const ORIGIN = 'https://www.example.com'

const opened: { database: Database; service: Service }[] = []

afterEach(async () => {
  for (const { database, service } of opened.splice(0)) {
    await service.app.stop(true)
    await service.drain()
    await database.close()
  }
})

function readOnlyUrl(url: string): string {
  const readOnly = new URL(url)
  readOnly.searchParams.set('default_transaction_read_only', 'on')
  return readOnly.toString()
}

describe.if(Boolean(databaseUrl))('a database server that takes no writes (PostgreSQL)', () => {
  test('writes answer 503 unavailable with Retry-After, never 500; /readyz 503; the pool leaves that server', async () => {
    const owner = await testService()
    const businessId = await seedBusiness(owner)
    const site = await seedKey(owner, businessId, { type: 'public', scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['www.example.com'] })
    const backend = await seedKey(owner, businessId, { type: 'private', scopes: ['AUDIENCE_PERSON_WRITE'] })

    const database = await openDatabase({ databaseUrl: readOnlyUrl(databaseUrl!), dataDir: 'memory://', maxConnections: 3 })
    const lines: string[] = []
    const service = createApp({ database, adminToken: ADMIN_TOKEN, logger: createLogger({ write: (line) => lines.push(line) }) })
    opened.push({ database, service })
    service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
    const base = `http://127.0.0.1:${service.app.server!.port}`

    // The pool's sessions on the read-only server, as the shared (writable) database sees them.
    const [{ name }] = (await queryRows<{ name: string }>(database.db, sql`select current_setting('application_name') as name`)) as [
      { name: string },
    ]
    const { db } = await testDatabase()
    const sessions = async () =>
      (await queryRows<{ pid: number }>(db, sql`select pid from pg_stat_activity where application_name = ${name}`)).map((row) => row.pid)
    const before = await sessions()
    expect(before.length).toBeGreaterThan(0)

    const post = (path: string, key: string, body: unknown, origin?: string) =>
      fetch(base + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(origin ? { origin } : {}) },
        body: JSON.stringify(body),
      })
    const writes = [
      await post('/api/v0/analytics', site.key, { eventType: 'page_view', url: `${ORIGIN}/` }, ORIGIN),
      await post('/api/v0/audience/people', backend.key, { email: 'ada@example.com' }),
    ]
    for (const response of writes) {
      expect({ status: response.status, code: ((await response.json()) as { error: { code: string } }).error.code }).toEqual({
        status: 503,
        code: 'unavailable',
      })
      expect(response.headers.get('retry-after')).toBe('5')
    }
    expect((await fetch(`${base}/readyz`)).status).toBe(503)
    expect(database.availability.up).toBe(false)
    // A ping on a session the probe is ending meets "terminating connection" first; the next says why.
    await waitUntil(
      async () =>
        (await database.ping().then(
          () => 'answered',
          (error: { code?: string }) => error.code,
        )) === 'DATABASE_NOT_PRIMARY',
      'a ping refused as DATABASE_NOT_PRIMARY',
    )

    // The probe ended every session the pool had there: none of them is left.
    await waitUntil(
      async () => (await sessions()).every((pid) => !before.includes(pid)),
      "the pool's sessions on the read-only server to end",
    )
    const stored = await queryRows<{ n: number }>(
      db,
      sql`select (select count(*) from analytics_events where business_id = ${businessId})::int
               + (select count(*) from people where business_id = ${businessId})::int as n`,
    )
    expect(stored[0]!.n).toBe(0)
    expect(lines.filter((line) => line.includes('database unavailable'))).toHaveLength(1)
    expect(lines.join('')).not.toContain('internal_error')
  })
})
