import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import type { Service } from '../../src/app.ts'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'
import { signInAs } from './browser-support.ts'
import { shoot } from './screenshots.ts'
import { addMember } from './support.ts'

/**
 * Webhooks as an owner sets them up in Chromium (docs/webhooks.md): the endpoint added
 * through the form, its secret copied from the page that shows it once, a test sent with the
 * button, verified by the receiver with the Standard Webhooks verifier, and the deliveries
 * page at a desktop and a phone width.
 */
let service: Service
let browser: Browser
let dashboard: string
const received: { body: string; headers: Record<string, string> }[] = []
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request: Request) {
    received.push({ body: await request.text(), headers: Object.fromEntries(request.headers) })
    return new Response('ok')
  },
})

beforeAll(async () => {
  if (chromiumMissing) return
  service = await testService({ webhooks: { allowedHosts: ['127.0.0.1'], everyMs: 3_600_000 } })
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  dashboard = `http://localhost:${service.app.server!.port}`
  browser = await launchChromium(30_000)
})

afterAll(async () => {
  receiver.stop(true)
  await browser?.close().catch(() => {})
  await service?.app.stop(true)
  await service?.drain()
})

const signIn = (page: Page) => signInAs(page, dashboard, 'ada@acme-outdoor.com')

const overflowOf = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)

describe.skipIf(chromiumMissing)('webhooks in the dashboard', () => {
  test('add an endpoint, copy its secret, send a test, see it delivered; at both widths', async () => {
    const acme = await seedBusiness(service, 'Acme Outdoor')
    await addMember(acme, { email: 'ada@acme-outdoor.com', role: 'owner' })
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dashboard })
    const page = await context.newPage()
    await signIn(page)
    await page.getByRole('link', { name: 'Webhooks' }).click()
    await page.getByLabel('URL').fill(`http://127.0.0.1:${receiver.port}/keygate/webhooks`)
    await page.getByLabel('Description').fill('Billing service')
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    await page.getByRole('heading', { name: 'Endpoint added' }).waitFor()
    await page.getByRole('button', { name: 'Copy secret' }).click()
    const secret = await page.evaluate(() => navigator.clipboard.readText())
    expect(secret).toMatch(/^whsec_/)
    await page.getByRole('link', { name: 'I have stored it: go to the endpoint' }).click()
    await page.getByRole('button', { name: 'Send a test' }).click()
    await page.waitForURL(/done=sent/)
    await seedKey(service, acme, { type: 'private', name: 'Order service' })
    await service.services.webhookDelivery.run()
    expect(received).toHaveLength(2)
    for (const got of received) expect(() => new Webhook(secret).verify(got.body, got.headers)).not.toThrow()
    await page.reload()
    expect(await page.locator('#deliveries tbody tr').count()).toBe(2)
    expect(await page.locator('#deliveries').textContent()).toContain('Delivered')
    await shoot(page, 'desktop/webhook-deliveries', { fullPage: true })
    expect(await overflowOf(page)).toBeLessThanOrEqual(0)
    const url = page.url()
    await context.close()

    const phone = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const small = await phone.newPage()
    await signIn(small)
    await small.goto(url)
    expect(await overflowOf(small)).toBeLessThanOrEqual(0)
    await shoot(small, 'phone/webhook-deliveries', { fullPage: true })
    await small.goto(`${dashboard}/dashboard/settings/developers/webhooks`)
    await shoot(small, 'phone/webhooks')
    await phone.close()
  }, 120_000)
})
