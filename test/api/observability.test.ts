import { describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { sql } from '../../db/client.ts'
import { errorHandling } from '../../src/http/errors.ts'
import { createLogger, lineLogger } from '../../src/observability/log.ts'
import { createMetrics } from '../../src/observability/metrics.ts'
import { testDatabase } from '../support/database.ts'
import { type admin, behindTrustedProxy, call, seedBusiness, seedKey, testService } from '../support/service.ts'

// GET /metrics, JSON log lines, the request log, and what no line holds.

const ORIGIN = 'https://www.example.com'

function capture() {
  const lines: string[] = []
  return { lines, logger: createLogger({ write: (line) => lines.push(line) }) }
}

/** Metric samples of a scrape: `name{labels}` -> value. */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    found.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return found
}

/** Elysia runs onAfterResponse hooks in a setImmediate after answering; one queued now runs after them. */
function afterResponses(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

async function scrape(service: Parameters<typeof admin>[0]) {
  await afterResponses()
  const response = await call(service, '/metrics', { headers: { authorization: 'Bearer test-admin-token-0123456789' } })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toStartWith('text/plain; version=0.0.4')
  return samples(await response.text())
}

/** A service with a request log, a key, and a scrape function. */
async function observed() {
  const { lines, logger } = capture()
  const service = await testService({ logger, logRequests: true })
  const businessId = await seedBusiness(service)
  const { key, record } = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE', 'FLOW_TRIGGER'] })
  return { service, lines, key, record, businessId }
}

describe('GET /metrics', () => {
  test('needs the admin token', async () => {
    const service = await testService()
    expect((await call(service, '/metrics')).status).toBe(401)
    expect((await call(service, '/metrics', { headers: { authorization: 'Bearer not-the-admin-token-at-all' } })).status).toBe(401)
    const { key } = await seedKey(service, await seedBusiness(service))
    expect((await call(service, '/metrics', { key })).status).toBe(401)
  })

  test('every series of the contract is there from the first scrape', async () => {
    const service = await testService()
    const text = await (await call(service, '/metrics', { headers: { authorization: 'Bearer test-admin-token-0123456789' } })).text()
    for (const family of [
      'keygate_http_requests_total counter',
      'keygate_http_request_duration_seconds histogram',
      'keygate_auth_refusals_total counter',
      'keygate_rate_limited_total counter',
      'keygate_key_cache_lookups_total counter',
      'keygate_ingest_queue_rows gauge',
      'keygate_ingest_rows_total counter',
    ]) {
      expect(text).toContain(`# TYPE ${family}\n`)
    }
    const found = samples(text)
    expect(found.get('keygate_rate_limited_total{key_type="public"}')).toBe(0)
    expect(found.get('keygate_key_cache_lookups_total{result="hit"}')).toBe(0)
    expect(found.get('keygate_ingest_queue_rows')).toBe(0)
  })

  test('requests are counted under the route as declared, with a duration histogram', async () => {
    const { service, key } = await observed()
    await call(service, '/api/v0/whoami', { key, origin: ORIGIN })
    await call(service, '/api/v0/whoami', { key, origin: ORIGIN })
    const flowId = crypto.randomUUID()
    await call(service, `/api/v0/flow/${flowId}/trigger?token=sk_${'x'.repeat(32)}`, { key, origin: ORIGIN, body: {} })
    await call(service, `/api/v0/no-such-route-${flowId}`, { key })
    const found = await scrape(service)
    expect(found.get('keygate_http_requests_total{route="/api/v0/whoami",method="GET",status="200"}')).toBe(2)
    expect(found.get('keygate_http_request_duration_seconds_count{route="/api/v0/whoami",method="GET"}')).toBe(2)
    expect(found.get('keygate_http_request_duration_seconds_bucket{route="/api/v0/whoami",method="GET",le="+Inf"}')).toBe(2)
    expect(found.get('keygate_http_requests_total{route="/api/v0/flow/:id/trigger",method="POST",status="404"}')).toBe(1)
    expect(found.get('keygate_http_requests_total{route="unmatched",method="GET",status="404"}')).toBe(1)
    const labels = [...found.keys()].join('\n')
    expect(labels).not.toContain(flowId)
    expect(labels).not.toContain('sk_')
  })

  test('refusals by the key chain are counted by code, and counts move with real requests', async () => {
    const { service, key } = await observed()
    const before = await scrape(service)
    await call(service, '/api/v0/whoami', {})
    await call(service, '/api/v0/whoami', { key: 'pk_' + 'u'.repeat(32), origin: ORIGIN })
    await call(service, '/api/v0/whoami', { key: 'pk_' + 'u'.repeat(32), origin: ORIGIN })
    await call(service, '/api/v0/whoami', { key, origin: 'https://evil.io' })
    await call(service, '/api/v0/whoami', { key, origin: ORIGIN })
    const after = await scrape(service)
    const moved = (name: string) => after.get(name)! - (before.get(name) ?? 0)
    expect(moved('keygate_auth_refusals_total{code="missing_api_key"}')).toBe(1)
    expect(moved('keygate_auth_refusals_total{code="invalid_api_key"}')).toBe(2)
    expect(moved('keygate_auth_refusals_total{code="origin_not_allowed"}')).toBe(1)
    expect(moved('keygate_auth_refusals_total{code="insufficient_scope"}')).toBe(0)
    // One unknown key: read once, then answered by the negative cache. The known key: read once, then hits.
    expect(moved('keygate_key_cache_lookups_total{result="miss"}')).toBe(2)
    expect(moved('keygate_key_cache_lookups_total{result="negative"}')).toBe(1)
    expect(moved('keygate_key_cache_lookups_total{result="hit"}')).toBe(1)
  })

  test('committed analytics rows are counted, and nothing waits once answered', async () => {
    const { service, key } = await observed()
    const response = await call(service, '/api/v0/analytics', {
      key,
      origin: ORIGIN,
      body: { events: [{ eventType: 'page_view' }, { eventType: 'signup' }, { eventType: 'page_view' }] },
    })
    expect(response.status).toBe(202)
    const found = await scrape(service)
    expect(found.get('keygate_ingest_rows_total')).toBe(3)
    expect(found.get('keygate_ingest_queue_rows')).toBe(0)
  })

  test('the rate limiter counts its refusals by key type', async () => {
    const clock = 1_000_000
    const service = await testService({ clientAddress: behindTrustedProxy, limitClock: () => clock })
    const businessId = await seedBusiness(service)
    const budget = { limit: 1, windowSeconds: 60 }
    const publicKey = await seedKey(service, businessId, { type: 'public', rateLimit: budget })
    const privateKey = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'], rateLimit: budget })
    const whoami = (key: string) => call(service, '/api/v0/whoami', { key, origin: ORIGIN, headers: { 'x-forwarded-for': '198.51.100.7' } })
    // Real requests over their budgets: the public key's visitor twice, the private key once.
    expect([(await whoami(publicKey.key)).status, (await whoami(publicKey.key)).status, (await whoami(publicKey.key)).status]).toEqual([
      200, 429, 429,
    ])
    expect([(await whoami(privateKey.key)).status, (await whoami(privateKey.key)).status]).toEqual([200, 429])
    const found = await scrape(service)
    expect(found.get('keygate_rate_limited_total{key_type="public"}')).toBe(2)
    expect(found.get('keygate_rate_limited_total{key_type="private"}')).toBe(1)
  })

  test('an invented HTTP method shares one label, and label values are escaped', () => {
    const metrics = createMetrics()
    metrics.recordRequest('BREW', 'unmatched', 404, 0.002)
    metrics.recordRequest('GET', '/a"b\\c', 200, 0.002)
    const text = metrics.render()
    expect(text).not.toContain('BREW')
    expect(text).toContain('keygate_http_requests_total{route="unmatched",method="OTHER",status="404"} 1')
    expect(text).toContain('keygate_http_requests_total{route="/a\\"b\\\\c",method="GET",status="200"} 1')
  })
})

describe('logs', () => {
  test('lines are JSON with level, time and msg; request lines add method, route, status, duration, keyId and requestId', async () => {
    const { service, lines, key, record } = await observed()
    const response = await call(service, '/api/v0/whoami', { key, origin: ORIGIN })
    await afterResponses()
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    for (const entry of entries) {
      expect(entry.level).toBeOneOf(['info', 'warn', 'error'])
      expect(Number.isNaN(Date.parse(entry.time as string))).toBe(false)
      expect(typeof entry.msg).toBe('string')
    }
    const request = entries.find((entry) => entry.requestId === response.headers.get('x-request-id'))
    expect(request).toMatchObject({ level: 'info', msg: 'request', method: 'GET', route: '/api/v0/whoami', status: 200, keyId: record.id })
    expect(typeof request!.durationMs).toBe('number')
    expect(request).toHaveProperty('client')
  })

  test('without LOG_REQUESTS there is no request line', async () => {
    const { lines, logger } = capture()
    const service = await testService({ logger })
    const { key } = await seedKey(service, await seedBusiness(service))
    expect((await call(service, '/api/v0/whoami', { key, origin: ORIGIN })).status).toBe(200)
    expect(lines).toEqual([])
  })

  test('a key in the query string and a key in the header are never logged, nor the query', async () => {
    const { service, lines, key } = await observed()
    const other = 'sk_' + 'Q'.repeat(32)
    await call(service, `/api/v0/whoami?api_key=${other}&q=secret-search`, { key, origin: ORIGIN })
    await call(service, `/api/v0/whoami?api_key=${other}`, { key: other })
    await call(service, `/api/v0/analytics?key=${key}`, { key, origin: ORIGIN, body: { eventType: `secret-body-${other}` } })
    await call(service, `/api/v0/nowhere/${key}?key=${key}`, { key })
    await afterResponses()
    expect(lines.length).toBeGreaterThanOrEqual(4)
    const text = lines.join('')
    for (const secret of [key, other, key.slice(3), other.slice(3), 'secret-search', 'secret-body', 'api_key']) {
      expect(text).not.toContain(secret)
    }
  })

  test('a 500 is logged under its request id with the SQLSTATE and statement, never the SQL parameters', async () => {
    const { lines, logger } = capture()
    const { db } = await testDatabase()
    const secret = 'sk_' + 'P'.repeat(32)
    const app = new Elysia().use(errorHandling(logger)).get('/api/v0/fails/:id', async () => {
      await db.execute(sql`select ${secret}::integer as n`)
      return 'unreachable'
    })
    const response = await app.handle(new Request('http://localhost/api/v0/fails/7'))
    expect(response.status).toBe(500)
    const body = await response.text()
    expect(body).not.toContain(secret)
    expect(lines).toHaveLength(1)
    expect(lines[0]).not.toContain(secret)
    expect(lines[0]).not.toContain('PPPP')
    const entry = JSON.parse(lines[0]!)
    expect(entry).toMatchObject({ level: 'error', msg: 'request failed', route: '/api/v0/fails/:id', code: '22P02' })
    expect(entry.requestId).toBe(JSON.parse(body).error.requestId)
    expect(entry.query).toContain('::integer')
  })

  test('LOG_FORMAT=pretty writes one readable line per entry, fields as name=value', () => {
    const lines: string[] = []
    createLogger({ format: 'pretty', write: (line) => lines.push(line) }).warn('cache flushed', { requestId: 'req_1', status: 503 })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}cache flushed requestId="req_1" status=503\n$/)
  })

  test('the log(line) adapter turns each line into one entry at the level chosen', () => {
    const { lines, logger } = capture()
    const log = lineLogger(logger, 'error')
    log('database unreachable: ECONNREFUSED')
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'error', msg: 'database unreachable: ECONNREFUSED' })
  })
})
