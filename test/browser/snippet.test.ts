import { chromiumMissing } from '../support/chromium.ts'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { and, asc, eq } from 'drizzle-orm'
import { analyticsEvents, audienceListMembers, audienceLists, people } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey } from '../support/service.ts'
import { BROWSER_TEST_TIMEOUT, eventually, openPage, snippetPage, startHarness, type Harness, type OpenedPage } from './support.ts'

// The tracking snippet (src/sdk/snippet.ts) in a real page, as docs/snippet.md tells
// developers to paste it: loaded from the API's origin by a page on another origin.

let harness: Harness
let opened: OpenedPage | undefined

const SNIPPET_SCOPES = ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE', 'AUDIENCE_LIST_WRITE']

beforeAll(async () => {
  if (chromiumMissing) return
  harness = await startHarness()
}, BROWSER_TEST_TIMEOUT)

beforeEach(() => harness?.resetClock())

afterAll(async () => {
  await opened?.close()
  await harness?.close()
}, BROWSER_TEST_TIMEOUT)

async function publicKey(options: { expiresAt?: string } = {}) {
  const businessId = await seedBusiness(harness.service)
  const { key, record } = await seedKey(harness.service, businessId, {
    scopes: SNIPPET_SCOPES,
    allowedOrigins: [harness.allowedEntry],
    expiresAt: options.expiresAt,
  })
  return { key, keyId: record.id, businessId }
}

/** Serves the snippet page at /shop (both page origins) and opens it from `origin`. */
async function openShop(origin: string, key: string, head = '') {
  harness.setPage('/shop', snippetPage(harness, key).replace('<head>', `<head>${head}`))
  await opened?.close()
  opened = await openPage(harness, `${origin}/shop`)
  return opened
}

/** Waits (bounded) until the snippet has run and `window.keygate` is its API. */
async function snippetLoaded(page: OpenedPage) {
  await page.page.waitForFunction(() => (window as { keygate?: { version?: number } }).keygate?.version === 0, null, {
    timeout: 5000,
  })
}

async function eventsOf(businessId: string, eventType?: string) {
  const { db } = await testDatabase()
  return db
    .select()
    .from(analyticsEvents)
    .where(
      eventType === undefined
        ? eq(analyticsEvents.businessId, businessId)
        : and(eq(analyticsEvents.businessId, businessId), eq(analyticsEvents.eventType, eventType)),
    )
    .orderBy(asc(analyticsEvents.occurredAt), asc(analyticsEvents.receivedAt))
}

/** Polls until at least `count` events of the type are stored (bounded), then returns them all. */
async function waitForEvents(businessId: string, eventType: string, count: number) {
  const deadline = Date.now() + 5000
  for (;;) {
    const rows = await eventsOf(businessId, eventType)
    if (rows.length >= count || Date.now() >= deadline) return rows
    await Bun.sleep(50)
  }
}

/** Calls `window.keygate.<call>` inside the page; resolves with what the call resolved to. */
async function inPage(page: OpenedPage, call: string): Promise<boolean> {
  const resolved: unknown = await page.page.evaluate(`window.keygate.${call}`)
  return resolved === true
}

describe.skipIf(chromiumMissing)('the tracking snippet in headless Chromium', () => {
  test(
    'the page loads the snippet from the API origin',
    async () => {
      const { key } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      const [script] = await page.seen(`${harness.apiOrigin}/sdk/v0.js`, 'Script')
      expect(script?.status).toBe(200)
      expect(script?.headers['content-type']).toBe('application/javascript; charset=utf-8')
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'a page view from an allowed origin lands in the database with the key id and the origin',
    async () => {
      const { key, keyId, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      const [event] = await eventually(() => eventsOf(businessId, 'page_view'))
      const anonymousId = await page.page.evaluate(() => localStorage.getItem('keygate_anonymous_id'))
      expect(event).toMatchObject({
        eventType: 'page_view',
        keyId,
        origin: harness.allowedOrigin,
        url: `${harness.allowedOrigin}/shop`,
        referrer: null,
      })
      expect(anonymousId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(event?.anonymousId).toBe(anonymousId!)
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    "the browser preflights the snippet's keyed JSON POST",
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await eventually(() => eventsOf(businessId, 'page_view'))
      const preflights = await page.seen(`${harness.apiOrigin}/api/v0/analytics`, 'Preflight')
      expect(preflights).toHaveLength(1)
      const preflight = preflights[0]!
      expect(preflight.method).toBe('OPTIONS')
      expect(preflight.requestHeaders['access-control-request-method']).toBe('POST')
      expect(preflight.requestHeaders['access-control-request-headers']).toBe('authorization,content-type')
      expect(preflight.status).toBe(204)
      expect(preflight.headers['access-control-allow-origin']).toBe(harness.allowedOrigin)
      expect(preflight.headers['access-control-allow-methods']).toContain('POST')
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'the same page from a refused origin stores nothing and says why in the console',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.refusedOrigin, key)
      const line = await page.waitForConsole('origin_not_allowed')
      expect(line).toStartWith('error: [keygate] origin_not_allowed: ')
      expect(line).toContain(harness.refusedOrigin)
      expect(line).toContain(harness.allowedEntry)
      expect(line).toMatch(/\(request req_\S+\)$/)
      expect(page.pageErrors).toEqual([])
      expect(await eventsOf(businessId)).toEqual([])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'an expired key stores nothing and says so in the console',
    async () => {
      const { key, businessId } = await publicKey({ expiresAt: new Date(Date.now() + 60_000).toISOString() })
      harness.advanceClock(120_000)
      const page = await openShop(harness.allowedOrigin, key)
      const line = await page.waitForConsole('expired_api_key')
      expect(line).toStartWith('error: [keygate] expired_api_key: ')
      expect(await eventsOf(businessId)).toEqual([])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'SPA navigation with pushState tracks a second page view, referred by the first',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      await eventually(() => eventsOf(businessId, 'page_view'))
      await page.page.evaluate(() => history.pushState({}, '', '/shop/cart'))
      const views = await waitForEvents(businessId, 'page_view', 2)
      expect(views.map((view) => [view.url, view.referrer])).toEqual([
        [`${harness.allowedOrigin}/shop`, null],
        [`${harness.allowedOrigin}/shop/cart`, `${harness.allowedOrigin}/shop`],
      ])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'going back (popstate) tracks a page view; replaceState to the same URL does not',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      await page.page.evaluate(() => history.pushState({}, '', '/shop/cart'))
      await waitForEvents(businessId, 'page_view', 2)
      await page.page.evaluate(() => history.replaceState({ scroll: 10 }, '', location.href))
      await page.page.evaluate(() => history.back())
      await waitForEvents(businessId, 'page_view', 3)
      // A tracked call after everything: once it is stored, no other page view is in flight.
      expect(await inPage(page, `track('barrier')`)).toBe(true)
      expect((await eventsOf(businessId, 'page_view')).map((view) => view.url)).toEqual([
        `${harness.allowedOrigin}/shop`,
        `${harness.allowedOrigin}/shop/cart`,
        `${harness.allowedOrigin}/shop`,
      ])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'a URL longer than the API accepts is cut to 2048 characters rather than refused',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      await page.page.evaluate(() => history.pushState({}, '', `/shop?q=${'x'.repeat(3000)}`))
      const views = await waitForEvents(businessId, 'page_view', 2)
      const long = views.find((view) => view.url !== `${harness.allowedOrigin}/shop`)
      expect(long?.url).toHaveLength(2048)
      expect(long?.url).toStartWith(`${harness.allowedOrigin}/shop?q=xxx`)
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'a page whose snippet tag lacks data-key gets a console error, no exception and no request',
    async () => {
      const { businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, '')
      const line = await page.waitForConsole('missing data-key')
      expect(line).toStartWith('error: [keygate] missing data-key')
      expect(await inPage(page, `track('ignored')`)).toBe(false)
      expect(page.pageErrors).toEqual([])
      expect(page.responses.filter((seen) => seen.url.startsWith(`${harness.apiOrigin}/api/`))).toEqual([])
      expect(await eventsOf(businessId)).toEqual([])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'track() stores the event type and its properties',
    async () => {
      const { key, businessId, keyId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      expect(await inPage(page, `track('signup', { plan: 'pro', seats: 3 })`)).toBe(true)
      const [event] = await eventsOf(businessId, 'signup')
      expect(event).toMatchObject({
        keyId,
        origin: harness.allowedOrigin,
        url: `${harness.allowedOrigin}/shop`,
        properties: { plan: 'pro', seats: 3 },
      })
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'calls queued in window.keygate before the snippet loads run once it has',
    async () => {
      const { key, businessId } = await publicKey()
      const queue = `<script>window.keygate = window.keygate || []; keygate.push(['track', 'early', { from: 'queue' }])</script>`
      await openShop(harness.allowedOrigin, key, queue)
      const [event] = await eventually(() => eventsOf(businessId, 'early'))
      expect(event?.properties).toEqual({ from: 'queue' })
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'malformed calls never throw into the page: the queue goes on, the console says why',
    async () => {
      const { key, businessId } = await publicKey()
      const queue = `<script>window.keygate = [null, ['nope'], ['track', 'still_tracked']]</script>`
      const page = await openShop(harness.allowedOrigin, key, queue)
      await eventually(() => eventsOf(businessId, 'still_tracked'))
      expect(await page.waitForConsole('unknown command')).toBe('warning: [keygate] unknown command nope')
      await page.page.evaluate(() => (window as unknown as { keygate: { push(command: unknown): void } }).keygate.push(undefined))
      expect(await inPage(page, `track('not a valid type!')`)).toBe(false)
      expect(await page.waitForConsole('invalid_request')).toContain('eventType')
      expect(page.pageErrors).toEqual([])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'the anonymous id survives a reload (localStorage)',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await eventually(() => eventsOf(businessId, 'page_view'))
      await page.page.reload()
      const views = await waitForEvents(businessId, 'page_view', 2)
      expect(views).toHaveLength(2)
      expect(views[0]!.anonymousId).not.toBeNull()
      expect(views[1]!.anonymousId).toBe(views[0]!.anonymousId)
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'after identify() with an externalId, events carry it as personId, until reset()',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      await inPage(page, `identify({ externalId: 'u-7', email: 'lin@example.com' })`)
      expect(await inPage(page, `track('after_identify')`)).toBe(true)
      await page.page.evaluate(() => (window as unknown as { keygate: { reset(): void } }).keygate.reset())
      expect(await inPage(page, `track('after_reset')`)).toBe(true)
      const [identified] = await eventsOf(businessId, 'after_identify')
      const [anonymous] = await eventsOf(businessId, 'after_reset')
      const [view] = await eventsOf(businessId, 'page_view')
      expect(identified).toMatchObject({ personId: 'u-7', anonymousId: view!.anonymousId! })
      expect(anonymous?.personId).toBeNull()
      expect(anonymous?.anonymousId).not.toBe(view!.anonymousId)
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'identify() upserts a person',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      const call = `identify({ email: 'ada@example.com', externalId: 'u-1', firstName: 'Ada', properties: { plan: 'pro' } })`
      expect(await inPage(page, call)).toBe(true)
      const { db } = await testDatabase()
      const rows = await db.select().from(people).where(eq(people.businessId, businessId))
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({
        email: 'ada@example.com',
        externalId: 'u-1',
        firstName: 'Ada',
        properties: { plan: 'pro' },
      })
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'addToList() adds the email to the list, creating the person',
    async () => {
      const { key, businessId } = await publicKey()
      const { db } = await testDatabase()
      const [list] = await db.insert(audienceLists).values({ businessId, slug: 'newsletter', name: 'Newsletter' }).returning()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      expect(await inPage(page, `addToList('newsletter', 'grace@example.com')`)).toBe(true)
      const members = await db
        .select({ email: people.email })
        .from(audienceListMembers)
        .innerJoin(people, eq(people.id, audienceListMembers.personId))
        .where(eq(audienceListMembers.listId, list!.id))
      expect(members).toEqual([{ email: 'grace@example.com' }])
    },
    BROWSER_TEST_TIMEOUT,
  )

  test(
    'addToList() with an unknown list resolves false and names the code in the console',
    async () => {
      const { key, businessId } = await publicKey()
      const page = await openShop(harness.allowedOrigin, key)
      await snippetLoaded(page)
      expect(await inPage(page, `addToList('no-such-list', 'grace@example.com')`)).toBe(false)
      expect(await page.waitForConsole('list_not_found')).toStartWith('error: [keygate] list_not_found: ')
      const { db } = await testDatabase()
      expect(await db.select().from(people).where(eq(people.businessId, businessId))).toEqual([])
    },
    BROWSER_TEST_TIMEOUT,
  )
})
