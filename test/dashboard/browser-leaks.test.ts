import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Browser, Page } from 'playwright-core'
import { apiKeys } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { checksumHolds } from '../../src/access/key-format.ts'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedBusiness, seedKey, testService } from '../support/service.ts'
import { signInAs } from './browser-support.ts'
import { shoot } from './screenshots.ts'
import { addMember, KEYS } from './support.ts'

/**
 * A leaked private key as an owner meets it in Chromium (docs/dashboard.md, "Leaked keys"):
 * the banner on the page they open, at a desktop and a phone width, the one-click roll, the
 * new key copied from the page it is shown on once, and that key working.
 */
let service: Service
let browser: Browser
let dashboard: string

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

const signIn = (page: Page) => signInAs(page, dashboard, 'ada@acme-outdoor.com')

const overflowOf = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)

describe.skipIf(chromiumMissing)('a leaked private key in the dashboard', () => {
  test('the banner at both widths, the one-click roll, the new key copied and working', async () => {
    const acme = await seedBusiness(service, 'Acme Outdoor')
    await addMember(acme, { email: 'ada@acme-outdoor.com', role: 'owner' })
    const leaked = await seedKey(service, acme, { type: 'private', name: 'Order service', scopes: ['ANALYTICS_READ', 'ANALYTICS_WRITE'] })
    const reported = await call(service, '/security/leaked-keys', {
      method: 'POST',
      body: { keys: [leaked.key], url: 'https://github.com/acme-outdoor/shop/blob/3f2a9c1/config/production.env' },
    })
    expect(reported.status).toBe(202)

    for (const viewport of [
      { name: 'desktop', width: 1280, height: 860 },
      { name: 'phone', width: 390, height: 844 },
    ]) {
      const context = await browser.newContext({ viewport })
      const page = await context.newPage()
      await signIn(page)
      const banner = page.locator(`#leak-${leaked.record.id}`)
      await expect(banner.isVisible()).resolves.toBe(true)
      expect(await banner.textContent()).toContain('Order service')
      expect(await overflowOf(page)).toBeLessThanOrEqual(0)
      await shoot(page, `${viewport.name}/leaked-key-banner`)
      await context.close()
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dashboard })
    const page = await context.newPage()
    await signIn(page)
    await page.locator(`#leak-${leaked.record.id}`).getByRole('button', { name: 'Roll the key' }).click()
    await page.getByRole('heading', { name: 'Your new private key' }).waitFor()
    await shoot(page, 'desktop/leaked-key-rolled')
    expect(await page.locator('.leak-banner').count()).toBe(0)
    await page.getByRole('button', { name: 'Copy key' }).click()
    const copied = await page.evaluate(() => navigator.clipboard.readText())
    expect(copied).toMatch(/^sk_[A-Za-z0-9]{36}$/)
    expect(checksumHolds(copied)).toBe(true)
    expect((await call(service, '/api/v0/whoami', { key: copied })).status).toBe(200)
    const [made] = await (await testDatabase()).db.select().from(apiKeys).where(eq(apiKeys.rolledFrom, leaked.record.id))
    expect(made!.keyHint.slice(-4)).toBe(copied.slice(-4))
    // Back on the keys page: no banner, and the key is never shown again.
    await page.goto(`${dashboard}${KEYS}`)
    expect(await page.locator('.leak-banner').count()).toBe(0)
    expect(await page.content()).not.toContain(copied)
    await context.close()
  }, 120_000)
})
