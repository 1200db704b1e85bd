import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Service } from '../../src/app.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { ADMIN_TOKEN, seedBusiness, seedKey, testService } from '../support/service.ts'
import { storedRows } from '../support/hostile.ts'

// Every 4xx of the API and the admin API carries the error envelope and X-Request-Id
// (docs/api.md, "Errors"), through a real socket with the options src/index.ts listens
// with: a 2 MB body once got Bun's bare 413, before any route could answer.

const MiB = 1024 * 1024
const SOME_ID = '00000000-0000-4000-8000-000000000000'

let service: Service
let base: string
let sk: string
let pk: string

beforeAll(async () => {
  service = await testService()
  service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
  base = `http://127.0.0.1:${service.app.server!.port}`
})
afterAll(async () => {
  await service.app.stop(true)
  await service.drain()
})

const big = (bytes: number) => JSON.stringify({ personId: 'x'.repeat(bytes) })

/** A body sent without Content-Length (chunked), as a stream of 64 KiB pieces. */
function chunked(bytes: number): ReadableStream<Uint8Array> {
  let left = bytes
  return new ReadableStream({
    pull(controller) {
      if (left <= 0) return controller.close()
      const piece = Math.min(left, 64 * 1024)
      left -= piece
      controller.enqueue(new Uint8Array(piece).fill(0x61))
    },
  })
}

type Case = [what: string, path: string, init: RequestInit & { duplex?: 'half' }, status: number, code: string]

const json = { 'content-type': 'application/json' }
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

const CASES: () => Case[] = () => [
  // Bodies over 1 MiB: refused unread by the route, with the envelope, up to the socket's 64 MiB.
  [
    '2 MB to the erasures',
    '/api/v0/analytics/erasures',
    { method: 'POST', headers: { ...bearer(sk), ...json }, body: big(2 * MiB) },
    413,
    'payload_too_large',
  ],
  [
    '2 MB of events',
    '/api/v0/analytics',
    { method: 'POST', headers: { ...bearer(sk), ...json }, body: big(2 * MiB) },
    413,
    'payload_too_large',
  ],
  [
    '20 MB of people',
    '/api/v0/audience/people',
    { method: 'POST', headers: { ...bearer(sk), ...json }, body: big(20 * MiB) },
    413,
    'payload_too_large',
  ],
  [
    '2 MB chunked, no Content-Length',
    '/api/v0/audience/people',
    { method: 'POST', headers: { ...bearer(sk), ...json }, body: chunked(2 * MiB), duplex: 'half' },
    413,
    'payload_too_large',
  ],
  [
    '2 MB to the admin API',
    '/admin/v0/businesses',
    { method: 'POST', headers: { ...admin, ...json }, body: big(2 * MiB) },
    413,
    'payload_too_large',
  ],
  [
    '2 MB to the admin API, a new member',
    `/admin/v0/businesses/${SOME_ID}/members`,
    { method: 'POST', headers: { ...admin, ...json }, body: big(2 * MiB) },
    413,
    'payload_too_large',
  ],
  [
    'a text/plain new member',
    `/admin/v0/businesses/${SOME_ID}/members`,
    { method: 'POST', headers: { ...admin, 'content-type': 'text/plain' }, body: 'x' },
    415,
    'unsupported_media_type',
  ],
  [
    '2 MB to the admin API without the token',
    '/admin/v0/businesses',
    { method: 'POST', headers: json, body: big(2 * MiB) },
    401,
    'unauthorized',
  ],
  ['2 MB with no key', '/api/v0/analytics', { method: 'POST', headers: json, body: big(2 * MiB) }, 401, 'missing_api_key'],
  // Bodies a parser refuses.
  [
    'a body that is not JSON',
    '/api/v0/analytics',
    { method: 'POST', headers: { ...bearer(sk), ...json }, body: '{"eventType":' },
    400,
    'invalid_request',
  ],
  [
    'an admin body that is not JSON',
    '/admin/v0/businesses',
    { method: 'POST', headers: { ...admin, ...json }, body: '{"name":' },
    400,
    'invalid_request',
  ],
  [
    'a text/plain body',
    '/api/v0/analytics',
    { method: 'POST', headers: { ...bearer(sk), 'content-type': 'text/plain' }, body: '{}' },
    415,
    'unsupported_media_type',
  ],
  [
    'a text/plain admin body',
    '/admin/v0/businesses',
    { method: 'POST', headers: { ...admin, 'content-type': 'text/plain' }, body: 'name=x' },
    415,
    'unsupported_media_type',
  ],
  [
    'a form to the admin API',
    '/admin/v0/businesses',
    { method: 'POST', headers: { ...admin, 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=x' },
    415,
    'unsupported_media_type',
  ],
  [
    'a body nested too deep',
    '/api/v0/analytics',
    { method: 'POST', headers: { ...bearer(sk), ...json }, body: '['.repeat(10_000) },
    400,
    'invalid_request',
  ],
  // Paths, methods, ids, keys.
  ['an unknown API path', '/api/v0/nothing', { headers: bearer(sk) }, 404, 'not_found'],
  ['an unknown path', '/nothing/here', {}, 404, 'not_found'],
  ['an unknown admin path', '/admin/v0/nothing', { headers: admin }, 404, 'not_found'],
  ['a method a path does not take', '/api/v0/whoami', { method: 'DELETE', headers: bearer(sk) }, 405, 'method_not_allowed'],
  ['POST to the health check', '/healthz', { method: 'POST', headers: json, body: '{}' }, 405, 'method_not_allowed'],
  ['an id that is no UUID', '/api/v0/analytics/erasures/not-a-uuid', { headers: bearer(sk) }, 400, 'invalid_request'],
  ['an admin id that is no UUID', '/admin/v0/businesses/not-a-uuid', { headers: admin }, 400, 'invalid_request'],
  ['no such erasure', `/api/v0/analytics/erasures/${SOME_ID}`, { headers: bearer(sk) }, 404, 'not_found'],
  ['a malformed key', '/api/v0/whoami', { headers: { authorization: 'Bearer nope' } }, 401, 'malformed_api_key'],
  [
    'a public key from another origin',
    '/api/v0/whoami',
    { headers: { ...bearer(pk), origin: 'https://evil.example' } },
    403,
    'origin_not_allowed',
  ],
  [
    'a public key on a private route',
    '/api/v0/analytics/erasures',
    { method: 'POST', headers: { ...bearer(pk), ...json, origin: 'https://example.com' }, body: '{"personId":"p"}' },
    403,
    'public_key_not_allowed',
  ],
  ['a route outside the scopes of the key', '/api/v0/audience/people', { headers: bearer(sk) }, 403, 'insufficient_scope'],
  ['a bad query parameter', '/api/v0/analytics?limit=0', { headers: bearer(sk) }, 400, 'invalid_request'],
  ['a wrong admin token', '/admin/v0/businesses', { headers: { authorization: 'Bearer wrong' } }, 401, 'unauthorized'],
]

describe('every 4xx carries the error envelope and X-Request-Id', () => {
  test('a table of refusals from the socket to the routes', async () => {
    // Seeded here: each test starts on an empty database (test/support/preload.ts).
    const businessId = await seedBusiness(service)
    sk = (await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_WRITE', 'ANALYTICS_READ', 'AUDIENCE_PERSON_WRITE'] }))
      .key
    pk = (await seedKey(service, businessId, { allowedOrigins: ['example.com'] })).key
    const before = await storedRows()
    for (const [what, path, init, status, code] of CASES()) {
      const response = await fetch(`${base}${path}`, init)
      const requestId = response.headers.get('x-request-id')
      const text = await response.text()
      const seen = `${what}: ${response.status} ${text.slice(0, 200)}`
      expect(seen).toStartWith(`${what}: ${status} `)
      expect(response.headers.get('content-type')).toStartWith('application/json')
      const body = JSON.parse(text) as { error: { code: string; message: string; requestId: string } }
      expect(`${what}: ${body.error.code}`).toBe(`${what}: ${code}`)
      expect(body.error.message.length).toBeGreaterThan(0)
      expect(requestId).toMatch(/^req_/)
      expect(body.error.requestId).toBe(requestId!)
    }
    expect(await storedRows()).toBe(before)
  })

  test('a dashboard form over 1 MiB: 413, refused unread, nothing changed', async () => {
    const response = await fetch(`${base}/dashboard/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `email=a%40b.io&password=${'x'.repeat(2 * MiB)}`,
    })
    expect(response.status).toBe(413)
    expect(response.headers.get('content-type')).toStartWith('text/html')
    expect(await response.text()).toContain('Nothing was changed')
  })

  test('after all of that, the server still answers', async () => {
    const response = await fetch(`${base}/healthz`)
    expect(response.status).toBe(200)
  })
})
