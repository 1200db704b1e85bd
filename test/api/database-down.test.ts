import { afterAll, describe, expect, test } from 'bun:test'
import { openDatabase } from '../../db/client.ts'
import { createApp } from '../../src/app.ts'
import { silentLogger } from '../../src/observability/log.ts'
import { call } from '../support/service.ts'

// A service whose database refuses connections (nothing listens on port 1): every request
// that needs the database answers 503 unavailable with Retry-After, never 400 or 500.
describe('the database is down', async () => {
  const database = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/keygate', dataDir: 'memory://' })
  const service = createApp({ database, adminToken: 'test-admin-token-0123456789', logger: silentLogger })
  afterAll(() => database.close())
  const key = 'pk_' + 'a'.repeat(32)

  test('a POST with a body (the key looked up in the parse step) is 503, not "not valid JSON"', async () => {
    const response = await call(service, '/api/v0/analytics', {
      method: 'POST',
      key,
      origin: 'https://www.example.com',
      body: { eventType: 'page_view' },
    })
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    const body = (await response.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('unavailable')
    expect(body.error.message).not.toContain('JSON')
  })

  test('a GET is 503 too, and /readyz says so', async () => {
    expect((await call(service, '/api/v0/whoami', { key })).status).toBe(503)
    expect((await call(service, '/readyz')).status).toBe(503)
  })
})
