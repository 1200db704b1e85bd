import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { analyticsEvents } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { PUBLIC_KEY_CEILING_VISITORS } from '../../src/config.ts'
import { MAX_PUBLIC_BODY_BYTES } from '../../src/http/request-body.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { testEventsDatabase } from '../support/database.ts'
import { behindTrustedProxy, seedBusiness, seedKey, testService } from '../support/service.ts'

// A public key sits in every visitor's page, so anyone can spread a flood of it over many
// addresses (docs/api.md, "Limits"): its bodies are limited to what a page sends, and all its
// visitors together meet a ceiling. Through a listening server behind a trusted proxy.
const ORIGIN = 'https://www.example.com'
let service: Service
let base: string
let businessId: string

beforeAll(async () => {
  service = await testService({ clientAddress: behindTrustedProxy })
  service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
  base = `http://127.0.0.1:${service.app.server!.port}`
})

// Every test starts on empty tables (test/support/preload.ts).
beforeEach(async () => {
  businessId = await seedBusiness(service)
})

afterAll(async () => {
  await service.app.stop(true)
})

function post(key: string, body: BodyInit, headers: Record<string, string> = {}) {
  return fetch(`${base}/api/v0/analytics`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'content-type': 'application/json', ...headers },
    body,
  })
}

function whoamiFrom(key: string, address: string) {
  return fetch(`${base}/api/v0/whoami`, { headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'x-forwarded-for': address } })
}

/** A batch of `count` events whose JSON is about `bytes` long. */
function batchOf(count: number, bytes: number, eventType: string): string {
  const pad = 'x'.repeat(Math.floor(bytes / count) - 60)
  return JSON.stringify({ events: Array.from({ length: count }, () => ({ eventType, properties: { pad } })) })
}

async function stored(eventType: string) {
  const { db } = await testEventsDatabase()
  return (await db.select({ id: analyticsEvents.id }).from(analyticsEvents).where(eq(analyticsEvents.eventType, eventType))).length
}

async function expectEnvelope(response: Response, status: number, code: string) {
  expect(response.status).toBe(status)
  const body = (await response.json()) as { error: { code: string; message: string; requestId: string } }
  expect(body.error.code).toBe(code)
  expect(body.error.requestId).toBe(response.headers.get('x-request-id')!)
  expect(response.headers.get('access-control-allow-origin')).toBe(ORIGIN)
  return body.error
}

describe("a public key's bodies are limited to what a page sends", () => {
  test('over 64 KiB by Content-Length: 413 payload_too_large with the envelope, nothing stored; under it: stored', async () => {
    const { key } = await seedKey(service, businessId)
    const big = batchOf(4, MAX_PUBLIC_BODY_BYTES + 200, 'too_big')
    expect(big.length).toBeGreaterThan(MAX_PUBLIC_BODY_BYTES)
    const error = await expectEnvelope(await post(key, big), 413, 'payload_too_large')
    expect(error.message).toContain('64 KiB, for public keys')
    expect(await stored('too_big')).toBe(0)

    // The snippet's batches stay under 60,000 bytes: such a batch is taken.
    const page = batchOf(4, 59_000, 'fits')
    expect((await post(key, page)).status).toBe(202)
    expect(await stored('fits')).toBe(4)
  })

  test('over 64 KiB while reading a chunked body: 413 with the envelope, nothing stored', async () => {
    const { key } = await seedKey(service, businessId)
    const big = batchOf(4, MAX_PUBLIC_BODY_BYTES + 200, 'chunked_big')
    const chunks = [big.slice(0, 30_000), big.slice(30_000, 60_000), big.slice(60_000)]
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
        controller.close()
      },
    })
    await expectEnvelope(await post(key, body), 413, 'payload_too_large')
    expect(await stored('chunked_big')).toBe(0)
  })

  test("a private key's body of most of 1 MiB is still taken", async () => {
    const { key } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const body = batchOf(60, 900_000, 'private_big')
    const response = await fetch(`${base}/api/v0/analytics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    })
    expect(response.status).toBe(202)
    expect(await stored('private_big')).toBe(60)
  })
})

describe("a public key's ceiling over all its visitors", () => {
  test('one request from each of many addresses: 429 once the key’s ceiling is spent, another key unaffected', async () => {
    // One request per visitor an hour: the ceiling is PUBLIC_KEY_CEILING_VISITORS of them.
    const rateLimit = { limit: 1, windowSeconds: 3600 }
    const { key } = await seedKey(service, businessId, { rateLimit })
    const other = (await seedKey(service, businessId, { rateLimit, name: 'other site' })).key
    const address = (i: number) => `198.51.${Math.floor(i / 250)}.${(i % 250) + 1}`

    const statuses = await Promise.all(
      Array.from({ length: PUBLIC_KEY_CEILING_VISITORS }, (_, i) => whoamiFrom(key, address(i)).then((r) => r.status)),
    )
    expect(statuses.filter((status) => status === 200).length).toBe(PUBLIC_KEY_CEILING_VISITORS)

    // A visitor never seen before, within its own budget: the key's ceiling refuses it.
    const refused = await whoamiFrom(key, '203.0.113.250')
    const error = await expectEnvelope(refused, 429, 'rate_limited')
    expect(error.message).toContain('all its visitors together')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(refused.headers.get('ratelimit-limit')).toBe(String(PUBLIC_KEY_CEILING_VISITORS))
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')

    // Another key of the same business, from the same addresses, has its own ceiling.
    expect((await whoamiFrom(other, '203.0.113.250')).status).toBe(200)
    expect((await whoamiFrom(other, address(0))).status).toBe(200)
  })

  test("a visitor over its own budget does not spend the key's ceiling", async () => {
    const { key } = await seedKey(service, businessId, { rateLimit: { limit: 1, windowSeconds: 3600 } })
    const repeated = await Promise.all(Array.from({ length: 150 }, () => whoamiFrom(key, '192.0.2.9').then((r) => r.status)))
    expect(repeated.filter((status) => status === 200).length).toBe(1)
    // 149 refusals of one visitor left the ceiling's other 99 requests for everyone else.
    const others = await Promise.all(Array.from({ length: 99 }, (_, i) => whoamiFrom(key, `198.18.0.${i + 1}`).then((r) => r.status)))
    expect(others.every((status) => status === 200)).toBe(true)
    expect((await whoamiFrom(key, '198.18.1.1')).status).toBe(429)
  })
})
