import { chromiumMissing } from '../support/chromium.ts'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import type { BrowserContext, Page, Request } from 'playwright-core'
import { eq } from 'drizzle-orm'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { analyticsEvents } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase, testDatabaseUrl } from '../support/database.ts'
import { killStartedProcesses, startProcess } from '../support/process.ts'
import { ADMIN_TOKEN, seedBusiness, seedKey, testService } from '../support/service.ts'
import { startHarness, type Harness } from './support.ts'

// The snippet in a real browser: its queue, retries and promises while
// the service is stopped, rate-limits or refuses. The snippet itself comes from the
// harness's server (always up); events go to a second service on the same database, on a
// port of its own, that the tests stop and start again ("the outage"). The outage cases
// (a) and (b) use the real thing: the service as a separate OS process (`bun src/index.ts`)
// stopped with SIGTERM, then a fresh process on the same database and the same port.

// Real backoff (1 s doubling to 30 s) and outages of a few seconds: tests take seconds.
const DELIVERY_TIMEOUT = 90_000

let harness: Harness
let api: Service | undefined
let apiPort = 0
const contexts: BrowserContext[] = []

beforeAll(async () => {
  if (chromiumMissing) return
  harness = await startHarness()
  await startApi()
  await startServiceProcess()
}, DELIVERY_TIMEOUT)

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close().catch(() => {})))
  if (!api) await startApi()
  if (!serviceProcess && !chromiumMissing) await startServiceProcess()
})

afterAll(async () => {
  await stopServiceProcess()
  await killStartedProcesses()
  if (processDir) rmSync(processDir, { recursive: true, force: true })
  await stopApi()
  await harness?.close()
}, DELIVERY_TIMEOUT)

// The service process of cases (a) and (b): the embedded engine in a temp DATA_DIR (one
// process owns it at a time, DATA_DIR/keygate.lock), or this run's DATABASE_URL; a fixed
// port so the page's data-api stays right across the restart.
const databaseUrl = await testDatabaseUrl()
const processDir = databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'kg-delivery-'))
const processEnv: Record<string, string> = {
  ADMIN_TOKEN,
  ...(processDir ? { DATA_DIR: join(processDir, 'data') } : { DATABASE_URL: databaseUrl! }),
}
let serviceProcess: ReturnType<typeof startProcess> | undefined
let processPort = 0

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '0.0.0.0', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

async function startServiceProcess() {
  processPort ||= freePort()
  const started = startProcess({ ...processEnv, PORT: String(processPort) })
  try {
    expect(await started.listening()).toBe(processPort)
  } catch (error) {
    started.child.kill('SIGKILL')
    await started.exited()
    throw error
  }
  serviceProcess = started
}

/** SIGTERM, as operators stop it: resolves once the process has exited (lock released). */
async function stopServiceProcess() {
  if (!serviceProcess) return
  const stopping = serviceProcess
  serviceProcess = undefined
  const code = await stopping.stop()
  if (code !== 0) throw new Error(`the service process exited ${code}: ${stopping.output()}`)
}

const processOrigin = () => `http://localhost:${processPort}`
const processBase = () => `http://127.0.0.1:${processPort}`

async function adminPost<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`${processBase()}/admin/v0${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(response.status).toBe(201)
  return (await response.json()) as T
}

/** Through the process's admin API: a business, its public key for the page, a private key to read events. */
async function processKeys() {
  const business = await adminPost<{ id: string }>('/businesses', { name: 'Delivery outage' })
  const { key } = await adminPost<{ key: string }>(`/businesses/${business.id}/keys`, {
    type: 'public',
    name: 'site',
    scopes: ['ANALYTICS_WRITE'],
    allowedOrigins: [harness.allowedEntry],
    createdBy: 'delivery test',
  })
  const { key: readKey } = await adminPost<{ key: string }>(`/businesses/${business.id}/keys`, {
    type: 'private',
    name: 'reader',
    scopes: ['ANALYTICS_READ'],
    // Polled while waiting for delivery: the default budget is not what is under test.
    rateLimit: { limit: 1_000_000, windowSeconds: 1 },
    createdBy: 'delivery test',
  })
  return { key, readKey, businessId: business.id }
}

/** The stored 'delivery' events, read through GET /api/v0/analytics (every page). */
async function storedViaApi(readKey: string): Promise<StoredRow[]> {
  const rows: StoredRow[] = []
  let cursor: string | null = null
  do {
    const url = new URL(`${processBase()}/api/v0/analytics`)
    url.searchParams.set('type', 'delivery')
    url.searchParams.set('limit', '1000')
    if (cursor) url.searchParams.set('cursor', cursor)
    const response = await fetch(url, { headers: { authorization: `Bearer ${readKey}` } })
    if (response.status !== 200) throw new Error(`GET /api/v0/analytics answered ${response.status}: ${await response.text()}`)
    const page = (await response.json()) as {
      data: { id: string; eventType: string; properties: { tag: string }; receivedAt: string }[]
      nextCursor: string | null
    }
    for (const event of page.data) {
      if (event.eventType === 'delivery') rows.push({ id: event.id, tag: event.properties.tag, receivedAt: event.receivedAt })
    }
    cursor = page.nextCursor
  } while (cursor)
  return rows
}

/** A fresh service process state (new app, limiter and caches) on the same database and port. */
async function startApi() {
  api = await testService()
  api.app.listen({ port: apiPort, hostname: '127.0.0.1' })
  apiPort = api.app.server!.port!
}

async function stopApi() {
  if (!api) return
  const stopping = api
  api = undefined
  await stopping.app.stop(true)
  await stopping.drain()
}

const apiOrigin = () => `http://localhost:${apiPort}`

async function publicKey(rateLimit?: { limit: number; windowSeconds: number }) {
  const businessId = await seedBusiness(harness.service)
  const { key } = await seedKey(harness.service, businessId, {
    scopes: ['ANALYTICS_WRITE'],
    allowedOrigins: [harness.allowedEntry],
    rateLimit,
  })
  return { key, businessId }
}

/** Serves a snippet page at `path` whose events go to the stoppable service (or to `api`). */
function servePage(path: string, key: string, api = apiOrigin()) {
  harness.setPage(
    path,
    `<!doctype html><html><head><title>shop</title>
<script async src="${harness.apiOrigin}/sdk/v0.js" data-key="${key}" data-api="${api}"></script>
</head><body></body></html>`,
  )
}

interface Tab {
  page: Page
  consoleLines: string[]
  pageErrors: string[]
  /** Status of each POST to the analytics route, in order (0: the request failed). */
  posts: number[]
}

async function openTab(context: BrowserContext, path: string): Promise<Tab> {
  const page = await context.newPage()
  const tab: Tab = { page, consoleLines: [], pageErrors: [], posts: [] }
  page.on('console', (message) => void tab.consoleLines.push(`${message.type()}: ${message.text()}`))
  page.on('pageerror', (error) => void tab.pageErrors.push(String(error)))
  const isPost = (url: string, method: string) => url.endsWith('/api/v0/analytics') && method === 'POST'
  page.on('requestfinished', (request) => {
    if (isPost(request.url(), request.method())) void request.response().then((response) => tab.posts.push(response?.status() ?? 0))
  })
  page.on('requestfailed', (request) => void (isPost(request.url(), request.method()) && tab.posts.push(0)))
  await page.goto(`${harness.allowedOrigin}${path}`)
  await page.waitForFunction(() => (window as { keygate?: { version?: number } }).keygate?.version === 0, null, { timeout: 5000 })
  return tab
}

async function newContext(init?: () => void) {
  const context = await harness.browser.newContext()
  if (init) await context.addInitScript(init)
  contexts.push(context)
  return context
}

/** Starts `count` track() calls tagged `<tag>-<n>` in the page; their promises land in window.results. */
async function track(tab: Tab, tag: string, count: number, first = 0, spacingMs = 0) {
  await tab.page.evaluate(
    async ({ tag, count, first, spacingMs }) => {
      const page = window as unknown as { keygate: { track(type: string, p: object): Promise<boolean> }; results?: Promise<boolean>[] }
      page.results ??= []
      for (let n = first; n < first + count; n++) {
        page.results.push(page.keygate.track('delivery', { tag: `${tag}-${n}` }))
        if (spacingMs) await new Promise((resolve) => setTimeout(resolve, spacingMs))
      }
    },
    { tag, count, first, spacingMs },
  )
}

const results = (tab: Tab) => tab.page.evaluate(() => Promise.all((window as unknown as { results: Promise<boolean>[] }).results))

interface StoredRow {
  id: string
  tag: string
  receivedAt: string | Date
}

async function storedTags(businessId: string): Promise<StoredRow[]> {
  const { db } = await testDatabase()
  const rows = await db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, businessId))
  return rows
    .filter((row) => row.eventType === 'delivery')
    .map((row) => ({ id: row.id, tag: (row.properties as { tag: string }).tag, receivedAt: row.receivedAt }))
}

/** Polls (bounded) until `tracked` distinct tags are stored; returns the case's figures. */
async function measure(name: string, source: string | (() => Promise<StoredRow[]>), tracked: number, back: number, timeoutMs = 60_000) {
  const read = typeof source === 'string' ? () => storedTags(source) : source
  const deadline = Date.now() + timeoutMs
  let rows = await read()
  while (new Set(rows.map((row) => row.tag)).size < tracked && Date.now() < deadline) {
    await Bun.sleep(100)
    rows = await read()
  }
  // Settle a moment so a late duplicate would be counted too.
  await Bun.sleep(500)
  rows = await read()
  const perTag = new Map<string, number>()
  for (const row of rows) perTag.set(row.tag, (perTag.get(row.tag) ?? 0) + 1)
  // The stored id is the snippet's: one id per tracked call, each stored once.
  const perId = new Map<string, number>()
  for (const row of rows) perId.set(row.id, (perId.get(row.id) ?? 0) + 1)
  expect(perId.size).toBe(perTag.size)
  expect([...perId.values()].every((count) => count === 1)).toBe(true)
  const last = Math.max(...rows.map((row) => new Date(row.receivedAt).getTime()))
  const figures = {
    tracked,
    stored: perTag.size,
    storedTwice: [...perTag.values()].filter((count) => count > 1).length,
    secondsToLast: rows.length ? Number(((last - back) / 1000).toFixed(1)) : null,
  }
  console.log(`[delivery] ${name}: ${JSON.stringify(figures)}`)
  return { figures, perTag }
}

function expectEachOnce(perTag: Map<string, number>, tags: string[]) {
  expect([...perTag.keys()].sort()).toEqual([...tags].sort())
  expect([...perTag.values()].every((count) => count === 1)).toBe(true)
}

const tags = (tag: string, count: number) => Array.from({ length: count }, (_, n) => `${tag}-${n}`)

describe.skipIf(chromiumMissing)('the snippet delivers every event once', () => {
  test(
    '(a) 20 events tracked while the service is stopped are all stored once, from the same page',
    async () => {
      const { key, readKey } = await processKeys()
      servePage('/a', key, processOrigin())
      const tab = await openTab(await newContext(), '/a')
      await stopServiceProcess()
      await track(tab, 'a', 20)
      await Bun.sleep(2500)
      await startServiceProcess()
      const back = Date.now()
      const { perTag } = await measure('a (process outage, same page)', () => storedViaApi(readKey), 20, back)
      expectEachOnce(perTag, tags('a', 20))
      expect(await results(tab)).toEqual(Array(20).fill(true))
      expect(tab.pageErrors).toEqual([])
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(b) events of a page left and of a closed tab during an outage go out from the next page',
    async () => {
      const { key, readKey } = await processKeys()
      servePage('/b1', key, processOrigin())
      servePage('/b2', key, processOrigin())
      const context = await newContext()
      const first = await openTab(context, '/b1')
      await stopServiceProcess()
      await track(first, 'b', 5)
      // A navigation: the page goes, its queue stays.
      await first.page.goto(`${harness.allowedOrigin}/b2`)
      await first.page.waitForFunction(() => (window as { keygate?: object }).keygate !== undefined)
      await first.page.evaluate(() => {
        const keygate = (window as unknown as { keygate: { track(type: string, p: object): Promise<boolean> } }).keygate
        for (let n = 5; n < 10; n++) void keygate.track('delivery', { tag: `b-${n}` })
      })
      // The closed tab.
      await first.page.close()
      await Bun.sleep(1000)
      await startServiceProcess()
      const back = Date.now()
      const next = await openTab(context, '/b1')
      const { perTag } = await measure('b (process outage, navigation + closed tab)', () => storedViaApi(readKey), 10, back)
      expectEachOnce(perTag, tags('b', 10))
      expect(next.pageErrors).toEqual([])
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(c) a burst of 25 against a budget of 2 requests per 4 s: all stored once, every promise true',
    async () => {
      const { key, businessId } = await publicKey({ limit: 2, windowSeconds: 4 })
      servePage('/c', key)
      const tab = await openTab(await newContext(), '/c')
      const back = Date.now()
      await track(tab, 'c', 25, 0, 20)
      const { perTag } = await measure('c (rate limit 2 per 4 s)', businessId, 25, back)
      expectEachOnce(perTag, tags('c', 25))
      expect(await results(tab)).toEqual(Array(25).fill(true))
      // The budget was met: the snippet waited out at least one 429.
      expect(tab.posts).toContain(429)
      expect(tab.consoleLines.some((line) => line.includes('[keygate] rate_limited'))).toBe(true)
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(g) after a 429, the next request comes no earlier than its Retry-After',
    async () => {
      // A budget of 1 request per 3 s: the automatic page view spends it, the next call is a 429.
      const { key, businessId } = await publicKey({ limit: 1, windowSeconds: 3 })
      servePage('/g', key)
      const context = await newContext()
      const page = await context.newPage()
      const isPost = (url: string, method: string) => url.endsWith('/api/v0/analytics') && method === 'POST'
      // Every analytics POST, timed by the browser itself (Request.timing(): wall-clock start,
      // response offsets from it), so event delivery to this process adds no jitter.
      const posts: Request[] = []
      page.on('request', (request) => void (isPost(request.url(), request.method()) && posts.push(request)))
      await page.goto(`${harness.allowedOrigin}/g`)
      await page.waitForFunction(() => (window as { keygate?: { version?: number } }).keygate?.version === 0, null, { timeout: 5000 })
      const deadline = Date.now() + 5000
      while (posts.length < 1 && Date.now() < deadline) await Bun.sleep(25)
      await Bun.sleep(200)
      const tab: Tab = { page, consoleLines: [], pageErrors: [], posts: [] }
      await track(tab, 'g', 1)
      expect(await results(tab)).toEqual([true])
      const answered = await Promise.all(posts.map(async (request) => ({ request, response: await request.response() })))
      const refused = answered.findIndex(({ response }) => response?.status() === 429)
      expect(refused).toBeGreaterThanOrEqual(0)
      const { request, response } = answered[refused]!
      const retryAfter = Number(response!.headers()['retry-after'])
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      // When the 429's headers reached the browser, and when the next POST left it.
      const refusedAt = request.timing().startTime + request.timing().responseStart
      const next = answered[refused + 1]
      expect(next).toBeDefined()
      const waitedMs = next!.request.timing().startTime - refusedAt
      console.log(`[delivery] g (Retry-After): ${JSON.stringify({ retryAfter, waitedSeconds: Number((waitedMs / 1000).toFixed(3)) })}`)
      expect(waitedMs).toBeGreaterThanOrEqual(retryAfter * 1000)
      const { perTag } = await measure('g (after the 429)', businessId, 1, refusedAt)
      expectEachOnce(perTag, tags('g', 1))
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(d) two tabs tracking during an outage: each event stored once',
    async () => {
      const { key, businessId } = await publicKey()
      servePage('/d', key)
      const context = await newContext()
      const left = await openTab(context, '/d')
      const right = await openTab(context, '/d')
      await stopApi()
      await track(left, 'd', 10)
      await track(right, 'd', 10, 10)
      await Bun.sleep(2000)
      await startApi()
      const back = Date.now()
      const { perTag } = await measure('d (two tabs)', businessId, 20, back)
      expectEachOnce(perTag, tags('d', 20))
      expect(await results(left)).toEqual(Array(10).fill(true))
      expect(await results(right)).toEqual(Array(10).fill(true))
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(d2) two tabs without Web Locks share the queue through the localStorage lease',
    async () => {
      const { key, businessId } = await publicKey()
      servePage('/d2', key)
      const context = await newContext(() => {
        Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined })
      })
      const left = await openTab(context, '/d2')
      const right = await openTab(context, '/d2')
      await stopApi()
      await track(left, 'd2', 10)
      await track(right, 'd2', 10, 10)
      await Bun.sleep(2000)
      await startApi()
      const back = Date.now()
      const { perTag } = await measure('d2 (two tabs, lease)', businessId, 20, back)
      expectEachOnce(perTag, tags('d2', 20))
      expect(await results(left)).toEqual(Array(10).fill(true))
      expect(await results(right)).toEqual(Array(10).fill(true))
    },
    DELIVERY_TIMEOUT,
  )

  test(
    "(h) an event another tab's send refused for good resolves false in the tab that tracked it, never true",
    async () => {
      const { key, businessId } = await publicKey()
      servePage('/h', key)
      const context = await newContext()
      const sender = await openTab(context, '/h')
      // The sender's automatic page view goes first; from then on its sends wait for a signal,
      // so it holds the send lock while the other tab queues behind it.
      const deadline = Date.now() + 5000
      while (sender.posts.length < 1 && Date.now() < deadline) await Bun.sleep(25)
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      await sender.page.route('**/api/v0/analytics', async (route) => {
        await held
        await route.continue()
      })
      await track(sender, 'h-sender', 1)
      const waiter = await openTab(context, '/h')
      // An event the service refuses for good (its type has a space): 400 for the batch holding it.
      await waiter.page.evaluate(() => {
        const page = window as unknown as { keygate: { track(type: string, p: object): Promise<boolean> }; refused?: Promise<boolean> }
        page.refused = page.keygate.track('not a type', { tag: 'h-refused' })
      })
      // Both of the waiter's events are in the shared queue before the sender may go on.
      await waiter.page.waitForFunction(() => Object.keys(localStorage).filter((name) => name.startsWith('keygate_queue:')).length >= 3)
      release()
      const refused = await waiter.page.evaluate(() => (window as unknown as { refused: Promise<boolean> }).refused)
      expect(refused).toBe(false)
      expect(await results(sender)).toEqual([true])
      expect(sender.consoleLines.some((line) => line.startsWith('error: [keygate] invalid_request'))).toBe(true)
      const { figures } = await measure('h (refused by another tab)', businessId, 1, Date.now())
      expect(figures.stored).toBe(1)
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(e) a 403 is final: promise false, the code on the console, nothing stored, one request',
    async () => {
      const businessId = await seedBusiness(harness.service)
      // A key without ANALYTICS_WRITE: the service answers 403 insufficient_scope.
      const { key } = await seedKey(harness.service, businessId, {
        scopes: ['AUDIENCE_LIST_WRITE'],
        allowedOrigins: [harness.allowedEntry],
      })
      servePage('/e', key)
      const tab = await openTab(await newContext(), '/e')
      // The automatic page view is refused first: wait for its answer, then count from there.
      const deadline = Date.now() + 5000
      while (tab.posts.length < 1 && Date.now() < deadline) await Bun.sleep(25)
      const before = tab.posts.length
      await track(tab, 'e', 1)
      expect(await results(tab)).toEqual([false])
      // Longer than the first backoff step: a retry would have come by now.
      await Bun.sleep(2500)
      expect(tab.posts.slice(before)).toEqual([403])
      expect(tab.consoleLines.some((line) => line.startsWith('error: [keygate] insufficient_scope'))).toBe(true)
      const { figures } = await measure('e (403)', businessId, 1, Date.now(), 0)
      expect(figures.stored).toBe(0)
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(f) with localStorage blocked, events wait in memory and are delivered after an outage',
    async () => {
      const { key, businessId } = await publicKey()
      servePage('/f', key)
      const context = await newContext(() => {
        Object.defineProperty(window, 'localStorage', {
          get() {
            throw new DOMException('blocked', 'SecurityError')
          },
        })
      })
      const tab = await openTab(context, '/f')
      await stopApi()
      await track(tab, 'f', 10)
      await Bun.sleep(2000)
      await startApi()
      const back = Date.now()
      const { perTag } = await measure('f (storage blocked)', businessId, 10, back)
      expectEachOnce(perTag, tags('f', 10))
      expect(await results(tab)).toEqual(Array(10).fill(true))
      expect(tab.pageErrors).toEqual([])
    },
    DELIVERY_TIMEOUT,
  )

  test(
    '(i) 12 events of 10 KB tracked at once go in batches under the 64 KiB a public key may send: all stored once, no 413',
    async () => {
      const { businessId, key } = await publicKey()
      servePage('/g', key)
      const tab = await openTab(await newContext(), '/g')
      const back = Date.now()
      await tab.page.evaluate(() => {
        const page = window as unknown as { keygate: { track(type: string, p: object): Promise<boolean> }; results?: Promise<boolean>[] }
        page.results = Array.from({ length: 12 }, (_, n) => page.keygate.track('delivery', { tag: `g-${n}`, pad: 'x'.repeat(10_000) }))
      })
      const { perTag } = await measure('g (batches cut by size)', businessId, 12, back)
      expectEachOnce(perTag, tags('g', 12))
      expect(await results(tab)).toEqual(Array(12).fill(true))
      // More than one batch, none refused for its size.
      expect(tab.posts.length).toBeGreaterThan(1)
      expect(tab.posts.every((status) => status === 202)).toBe(true)
    },
    DELIVERY_TIMEOUT,
  )
})
