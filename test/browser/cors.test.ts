import { chromiumMissing } from '../support/chromium.ts'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { seedBusiness, seedKey } from '../support/service.ts'
import { BROWSER_TEST_TIMEOUT, blankPage, openPage, startHarness, type Harness, type OpenedPage } from './support.ts'

// Plain `fetch` from page code on another origin, as a developer would write it: Chromium
// preflights (Authorization is not a CORS-safelisted header) and then enforces CORS on the
// answer. These pin what page code can and cannot read.

let harness: Harness
let opened: OpenedPage | undefined

beforeAll(async () => {
  if (chromiumMissing) return
  harness = await startHarness()
  harness.setPage('/blank', blankPage)
}, BROWSER_TEST_TIMEOUT)

beforeEach(() => harness?.resetClock())

afterAll(async () => {
  await opened?.close()
  await harness?.close()
}, BROWSER_TEST_TIMEOUT)

async function openBlank(origin: string) {
  await opened?.close()
  opened = await openPage(harness, `${origin}/blank`)
  return opened
}

interface PageAnswer {
  status: number
  body: unknown
  requestId: string | null
  /** What page code gets for a header that is not exposed: always null. */
  credentials: string | null
}

/** Runs `fetch(url)` with the key inside the page and returns what page code could read. */
function fetchFromPage(page: OpenedPage, url: string, key: string): Promise<PageAnswer> {
  return page.page.evaluate(
    async ({ url, key }) => {
      const response = await fetch(url, { headers: { Authorization: `Bearer ${key}` } })
      return {
        status: response.status,
        body: await response.json(),
        requestId: response.headers.get('x-request-id'),
        credentials: response.headers.get('access-control-allow-credentials'),
      }
    },
    { url, key },
  )
}

async function publicKey(options: { expiresAt?: string } = {}) {
  const businessId = await seedBusiness(harness.service)
  const { key, record } = await seedKey(harness.service, businessId, {
    allowedOrigins: [harness.allowedEntry],
    expiresAt: options.expiresAt,
  })
  return { key, keyId: record.id, businessId }
}

describe.skipIf(chromiumMissing)('CORS from a real page (headless Chromium)', () => {
  test(
    'an allowed page reads the 200 JSON body of whoami',
    async () => {
      const { key, keyId, businessId } = await publicKey()
      const page = await openBlank(harness.allowedOrigin)
      const answer = await fetchFromPage(page, `${harness.apiOrigin}/api/v0/whoami`, key)
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({
        businessId,
        keyId,
        keyType: 'public',
        origin: harness.allowedOrigin,
        allowedOrigins: [harness.allowedEntry],
      })
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'the browser preflights the keyed request, and the preflight allows Authorization and Content-Type for two hours',
    async () => {
      const { key } = await publicKey()
      const page = await openBlank(harness.allowedOrigin)
      await fetchFromPage(page, `${harness.apiOrigin}/api/v0/whoami`, key)
      const preflights = await page.seen(`${harness.apiOrigin}/api/v0/whoami`, 'Preflight')
      expect(preflights).toHaveLength(1)
      const preflight = preflights[0]!
      expect(preflight.method).toBe('OPTIONS')
      expect(preflight.requestHeaders['access-control-request-headers']).toBe('authorization')
      expect(preflight.status).toBe(204)
      expect(preflight.headers['access-control-allow-origin']).toBe(harness.allowedOrigin)
      const allowedHeaders = preflight.headers['access-control-allow-headers']!.toLowerCase().split(/\s*,\s*/)
      expect(allowedHeaders).toContain('authorization')
      expect(allowedHeaders).toContain('content-type')
      expect(preflight.headers['access-control-allow-methods']).toContain('GET')
      expect(preflight.headers['access-control-max-age']).toBe('7200')
      expect(preflight.headers.vary).toContain('Origin')
      expect(preflight.headers['access-control-allow-credentials']).toBeUndefined()
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'no answer, preflight or actual, allows credentials',
    async () => {
      const { key } = await publicKey()
      const page = await openBlank(harness.allowedOrigin)
      const answer = await fetchFromPage(page, `${harness.apiOrigin}/api/v0/whoami`, key)
      expect(answer.credentials).toBeNull()
      const url = `${harness.apiOrigin}/api/v0/whoami`
      const [preflight] = await page.seen(url, 'Preflight')
      const [actual] = await page.seen(url, 'Fetch')
      expect(preflight?.headers).not.toHaveProperty('access-control-allow-credentials')
      expect(actual?.status).toBe(200)
      expect(actual?.headers['access-control-allow-origin']).toBe(harness.allowedOrigin)
      expect(actual?.headers).not.toHaveProperty('access-control-allow-credentials')
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'a refused page reads the 403 error body and the exposed X-Request-Id',
    async () => {
      const { key } = await publicKey()
      const page = await openBlank(harness.refusedOrigin)
      const answer = await fetchFromPage(page, `${harness.apiOrigin}/api/v0/whoami`, key)
      expect(answer.status).toBe(403)
      const { error } = answer.body as { error: { code: string; message: string; requestId: string } }
      expect(error.code).toBe('origin_not_allowed')
      expect(error.message).toContain(harness.refusedOrigin)
      expect(error.message).toContain(harness.allowedEntry)
      expect(answer.requestId).toMatch(/^req_/)
      expect(answer.requestId).toBe(error.requestId)
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'a page reads the 401 body of an expired key',
    async () => {
      const { key } = await publicKey({ expiresAt: new Date(Date.now() + 60_000).toISOString() })
      harness.advanceClock(120_000)
      const page = await openBlank(harness.allowedOrigin)
      const answer = await fetchFromPage(page, `${harness.apiOrigin}/api/v0/whoami`, key)
      expect(answer.status).toBe(401)
      expect(answer.body).toMatchObject({ error: { code: 'expired_api_key' } })
      expect(answer.requestId).toMatch(/^req_/)
    },
    BROWSER_TEST_TIMEOUT,
  )
})
