import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { apiKeys } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { createMemberService } from '../../src/members/service.ts'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedBusiness, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'
import { signInAs } from './browser-support.ts'
import { shoot } from './screenshots.ts'
import { addMember, KEYS } from './support.ts'

/**
 * Every dashboard page in a real Chromium at a desktop and a phone width (issue 33): each
 * one fits the width (nothing wider than the screen but the tables and code that scroll
 * within themselves), the phone navigation opens from its Menu button, the switcher moves
 * between businesses, and the live events view pauses while its tab is hidden. Each page is
 * photographed at both widths (docs/screenshots/desktop/ and phone/ with SCREENSHOTS=docs).
 */
const TOUR_TIMEOUT = 300_000
const WIDTHS = {
  desktop: { width: 1280, height: 860 },
  phone: { width: 390, height: 844 },
} as const
type Device = keyof typeof WIDTHS

let service: Service
let browser: Browser
let dashboard: string
let acme: string
let ids: { marketing: string; orders: string }
let choosePasswordPath: string

beforeAll(async () => {
  if (chromiumMissing) return
  service = await testService()
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  dashboard = `http://localhost:${service.app.server!.port}`
  browser = await launchChromium(30_000)
})

afterAll(async () => {
  await browser?.close().catch(() => {})
  await service?.app.stop(true)
  await service?.drain()
})

/**
 * Acme Outdoor with keys, events, members and changes to show; Rival Co, where Ada is a
 * member too. Each test seeds its own: the tables are emptied between tests.
 */
async function seedTour() {
  acme = await seedBusiness(service, 'Acme Outdoor')
  const rival = await seedBusiness(service, 'Rival Co')
  await addMember(acme, { email: 'ada@acme-outdoor.com', role: 'owner' })
  await addMember(acme, { email: 'bo@acme-outdoor.com', role: 'member' })
  await addMember(rival, { email: 'ada@acme-outdoor.com', role: 'member', password: null })
  const invited = await createMemberService((await testDatabase()).db).create(
    acme,
    { email: 'carol@acme-outdoor.com', role: 'member' },
    TEST_AUTHOR,
    'member',
  )
  choosePasswordPath = `/dashboard/sign-in/link?token=${invited.signInLink!.token}`

  const marketing = await seedKey(service, acme, {
    name: 'Marketing site',
    allowedOrigins: ['acme-outdoor.com'],
    scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'],
  })
  const orders = await seedKey(service, acme, { type: 'private', name: 'Order service', scopes: ['ANALYTICS_READ', 'ANALYTICS_WRITE'] })
  const old = await seedKey(service, acme, { name: 'Old landing page', allowedOrigins: ['old.acme-outdoor.com'] })
  await service.services.keys.revoke(acme, old.record.id, TEST_AUTHOR)
  await service.services.keys.update(
    acme,
    marketing.record.id,
    { allowedOrigins: ['acme-outdoor.com', 'localhost:5173'] },
    { actor: 'member:ada@acme-outdoor.com' },
  )
  await service.services.keys.update(acme, orders.record.id, { allowedIps: ['203.0.113.0/24'], ipPolicy: 'report' }, TEST_AUTHOR)
  ids = { marketing: marketing.record.id, orders: orders.record.id }

  const minute = (n: number) => new Date(Date.now() - (30 - n) * 60_000).toISOString()
  const fromSite = [
    { eventType: 'page_view', url: 'https://www.acme-outdoor.com/', anonymousId: 'a-7f3c2e', timestamp: minute(1) },
    {
      eventType: 'page_view',
      url: 'https://www.acme-outdoor.com/tents/trailhead-2',
      referrer: 'https://www.acme-outdoor.com/',
      anonymousId: 'a-7f3c2e',
      timestamp: minute(2),
    },
    {
      eventType: 'add_to_cart',
      anonymousId: 'a-7f3c2e',
      properties: { sku: 'TH-2-GRN', price: 249, currency: 'EUR' },
      timestamp: minute(3),
    },
    {
      eventType: 'signup',
      personId: 'cust_1042',
      anonymousId: 'a-7f3c2e',
      properties: { plan: 'member', newsletter: true },
      timestamp: minute(4),
    },
  ]
  expect(
    (await call(service, '/api/v0/analytics', { key: marketing.key, origin: 'https://www.acme-outdoor.com', body: { events: fromSite } }))
      .status,
  ).toBe(202)
  const fromServer = {
    eventType: 'order_completed',
    personId: 'cust_1042',
    properties: { orderId: 'A-20931', total: 268.9, items: 2 },
    timestamp: minute(5),
  }
  expect((await call(service, '/api/v0/analytics', { key: orders.key, body: fromServer })).status).toBe(202)
}

async function open(device: Device): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: WIDTHS[device] })
  context.setDefaultTimeout(20_000)
  return { context, page: await context.newPage() }
}

const signIn = (page: Page) => signInAs(page, dashboard, 'ada@acme-outdoor.com')

/**
 * How far the page reaches past the screen's right edge, in pixels (0: it fits), and the
 * innermost elements that do, so that a failure names them.
 */
function overflow(page: Page): Promise<{ pixels: number; by: string[] }> {
  return page.evaluate(() => {
    const pixels = document.documentElement.scrollWidth - window.innerWidth
    if (pixels <= 0) return { pixels: 0, by: [] }
    const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
    const innermost = wide.filter((e) => !wide.some((other) => other !== e && e.contains(other)))
    return {
      pixels,
      by: innermost.slice(0, 3).map((e) => `${e.closest('[id]')?.id ?? ''} ${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`),
    }
  })
}

/** Visits, checks the status and the width, and photographs one page. */
async function visit(page: Page, device: Device, name: string, path: string, status = 200) {
  const response = await page.goto(`${dashboard}${path}`)
  expect({ name, status: response!.status() }).toEqual({ name, status })
  expect({ name, device, overflow: await overflow(page) }).toEqual({ name, device, overflow: { pixels: 0, by: [] } })
  await shoot(page, `${device}/${name}`, { fullPage: true })
}

describe.skipIf(chromiumMissing)('every dashboard page, at a desktop and a phone width', () => {
  for (const device of ['desktop', 'phone'] as const) {
    test(
      `${device}: every page fits the width and is photographed`,
      async () => {
        await seedTour()
        const { context, page } = await open(device)
        await visit(page, device, 'sign-in', '/dashboard/sign-in')
        await visit(page, device, 'choose-password', choosePasswordPath)
        await signIn(page)
        const pages: [string, string, number?][] = [
          ['api-keys', KEYS],
          ['create-key', `${KEYS}/new`],
          ['key', `${KEYS}/${ids.marketing}`],
          ['key-private', `${KEYS}/${ids.orders}`],
          ['edit-key', `${KEYS}/${ids.marketing}/edit`],
          ['roll-key', `${KEYS}/${ids.marketing}/roll`],
          ['revoke-key', `${KEYS}/${ids.marketing}/revoke`],
          ['key-audit', `${KEYS}/${ids.marketing}/audit`],
          ['events', '/dashboard/events'],
          ['events-of-key', `/dashboard/events?key=${ids.orders}`],
          ['audit-trail', '/dashboard/settings/audit'],
          ['members', '/dashboard/settings/members'],
          ['identity-secret', '/dashboard/settings/business'],
          ['not-found', '/dashboard/no-such-page', 404],
        ]
        for (const [name, path, status] of pages) await visit(page, device, name, path, status)

        // The other business, through the switcher: its key list is empty, with a create button.
        await page.goto(`${dashboard}${KEYS}`)
        if (device === 'phone') expect(await page.locator('#sidenav').isVisible()).toBe(false)
        await page.locator('.switcher > summary').click()
        await shoot(page, `${device}/switcher`)
        await page.getByRole('button', { name: /Rival Co/ }).click()
        await page.waitForURL(`${dashboard}${KEYS}`)
        expect(await page.locator('.topbar .business').first().textContent()).toBe('Rival Co')
        await page.locator('#no-keys').getByRole('link', { name: 'Create public key' }).waitFor()
        expect(await overflow(page)).toEqual({ pixels: 0, by: [] })
        await shoot(page, `${device}/api-keys-empty`, { fullPage: true })
        await context.close()
      },
      TOUR_TIMEOUT,
    )
  }

  test(
    'at phone width the navigation hides behind a Menu button that opens it; at desktop width it stays',
    async () => {
      await seedTour()
      const phone = await open('phone')
      await signIn(phone.page)
      const menu = phone.page.getByRole('button', { name: 'Menu' })
      expect(await menu.isVisible()).toBe(true)
      expect(await menu.getAttribute('aria-expanded')).toBe('false')
      expect(await phone.page.locator('#sidenav').isVisible()).toBe(false)
      await menu.click()
      expect(await menu.getAttribute('aria-expanded')).toBe('true')
      const events = phone.page.locator('#sidenav').getByRole('link', { name: 'Events' })
      expect(await events.isVisible()).toBe(true)
      await shoot(phone.page, 'phone/menu-open')
      await events.click()
      await phone.page.waitForURL(`${dashboard}/dashboard/events`)
      await phone.context.close()

      const desktop = await open('desktop')
      await signIn(desktop.page)
      expect(await desktop.page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false)
      expect(await desktop.page.locator('#sidenav').getByRole('link', { name: 'Events' }).isVisible()).toBe(true)
      await desktop.context.close()
    },
    TOUR_TIMEOUT,
  )

  test(
    'the live events view stops asking while its tab is hidden and picks up again when shown',
    async () => {
      await seedTour()
      const { context, page } = await open('desktop')
      await signIn(page)
      const asked: string[] = []
      page.on('request', (request) => {
        if (request.url().includes('/dashboard/events/live')) asked.push(request.url())
      })
      await page.goto(`${dashboard}/dashboard/events?type=return_visit`)
      await page.getByText('Live: new events appear at the top as they arrive.').waitFor()
      // The tab goes to the background (as a browser reports it to the page).
      await page.evaluate(() => {
        Object.defineProperty(document, 'hidden', { configurable: true, get: () => true })
        document.dispatchEvent(new Event('visibilitychange'))
      })
      await page.getByText('Live view paused while this tab is hidden.').waitFor()
      const before = asked.length
      const marketing = await keyOf('Marketing site')
      const tracked = await call(service, '/api/v0/analytics', {
        key: marketing,
        origin: 'https://www.acme-outdoor.com',
        body: { eventType: 'return_visit' },
      })
      expect(tracked.status).toBe(202)
      // Three polls' worth of time pass while hidden: no request goes out, nothing is added.
      await Bun.sleep(6_500)
      expect(asked.length).toBe(before)
      expect(await page.locator('li.event').count()).toBe(0)
      await page.evaluate(() => {
        Object.defineProperty(document, 'hidden', { configurable: true, get: () => false })
        document.dispatchEvent(new Event('visibilitychange'))
      })
      await page.locator('li.event .event-type', { hasText: 'return_visit' }).waitFor()
      expect(asked.length).toBeGreaterThan(before)
      await context.close()
    },
    TOUR_TIMEOUT,
  )
})

/** The plaintext of a seeded public key, read back from the database (public keys keep theirs). */
async function keyOf(name: string): Promise<string> {
  const [row] = await (await testDatabase()).db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.businessId, acme), eq(apiKeys.name, name)))
  return row!.publicKey!
}
