import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Browser, Page } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { apiKeys } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase } from '../support/database.ts'
import { TEST_AUTHOR, seedBusiness, seedKey, testService } from '../support/service.ts'
import { shoot } from './screenshots.ts'
import { addMember, KEYS, PASSWORD } from './support.ts'

/**
 * The dashboard in a real headless Chromium against a real loopback server. A second
 * loopback port serves a plain page: the "customer site" that calls the API with the key.
 */

// The docs' screenshots are refreshed on request (`SCREENSHOTS=docs`, test/dashboard/screenshots.ts).
const E2E_TIMEOUT = 120_000

let service: Service
let browser: Browser
let site: ReturnType<typeof Bun.serve>
let dashboard: string
let siteOrigin: string

beforeAll(async () => {
  if (chromiumMissing) return
  service = await testService()
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  dashboard = `http://localhost:${service.app.server!.port}`
  site = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () => new Response('<!doctype html><title>Customer site</title><p>shop</p>', { headers: { 'content-type': 'text/html' } }),
  })
  siteOrigin = `http://localhost:${site.port}`
  browser = await launchChromium(30_000)
})

afterAll(async () => {
  await browser?.close().catch(() => {})
  await site?.stop(true)
  await service?.app.stop(true)
  await service?.drain()
})

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dashboard })
  context.setDefaultTimeout(15_000)
  return context.newPage()
}

async function signInAs(page: Page, email: string) {
  await page.goto(`${dashboard}/dashboard`)
  await expect(page.url()).toStartWith(`${dashboard}/dashboard/sign-in`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${dashboard}${KEYS}`)
}

/** whoami, called by a script of the customer's page, as the tracking snippet would. */
async function whoamiFromSite(key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const page = await browser.newPage()
  try {
    await page.goto(`${siteOrigin}/`)
    return await page.evaluate(
      async ({ api, key }) => {
        const response = await fetch(`${api}/api/v0/whoami`, { headers: { authorization: `Bearer ${key}` } })
        return { status: response.status, body: (await response.json()) as Record<string, unknown> }
      },
      { api: dashboard, key },
    )
  } finally {
    await page.close()
  }
}

describe.skipIf(chromiumMissing)('the dashboard in a browser', () => {
  test(
    'a member creates a public key, copies it, uses it from an allowed origin, then revokes it',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'ada@acme.example' })
      // Neighbours in the list, so that the screenshot shows the states a list holds.
      await seedKey(service, businessId, { type: 'private', name: 'Order service', scopes: ['ANALYTICS_READ', 'AUDIENCE_PERSON_READ'] })
      const old = await seedKey(service, businessId, { name: 'Old landing page', allowedOrigins: ['acme-outdoor.com'] })
      await service.services.keys.revoke(businessId, old.record.id, TEST_AUTHOR)
      const staging = await seedKey(service, businessId, {
        name: 'Staging shop',
        allowedOrigins: ['staging.acme-outdoor.com'],
        scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'],
      })
      const db = (await testDatabase()).db
      await db
        .update(apiKeys)
        .set({ lastUsedAt: new Date(Date.now() - 3 * 60_000 - 5_000) })
        .where(eq(apiKeys.id, staging.record.id))
      const campaign = await seedKey(service, businessId, { name: 'Spring campaign', allowedOrigins: ['spring.acme-outdoor.com'] })
      await db
        .update(apiKeys)
        .set({ expiresAt: new Date(Date.now() - 86_400_000) })
        .where(eq(apiKeys.id, campaign.record.id))

      const page = await newPage()
      await signInAs(page, 'ada@acme.example')
      await expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('API keys')

      // Create form: an invalid entry is explained while typing, before any submit.
      await page.getByRole('link', { name: 'Create public key' }).click()
      await page.waitForURL(`${dashboard}${KEYS}/new`)
      await page.getByLabel('Name').fill('Marketing site')
      await page.getByLabel('Description (optional)').fill('www and the blog')
      const origins = page.getByLabel('Allowed origins')
      await origins.fill(`example.com\n*.example.com`)
      const inlineError = page.locator('#origins-error li')
      await inlineError.first().waitFor()
      expect(await inlineError.allTextContents()).toEqual([
        expect.stringMatching(/^"\*\.example\.com" is a wildcard, which is not supported: write "example\.com"/),
      ])
      expect(await origins.getAttribute('aria-invalid')).toBe('true')
      await page.getByLabel(/BLOG_READ/).check()
      await shoot(page, 'create-key', { fullPage: true })
      // The script keeps the form from being sent while an entry is invalid.
      await page.getByRole('button', { name: 'Create key' }).click()
      expect(page.url()).toBe(`${dashboard}${KEYS}/new`)
      expect(await db.select().from(apiKeys).where(eq(apiKeys.name, 'Marketing site'))).toHaveLength(0)

      await origins.fill(`example.com\nlocalhost:${site.port}`)
      await page.waitForFunction(() => document.querySelectorAll('#origins-error li').length === 0)
      await page.getByRole('button', { name: 'Create key' }).click()
      await page.waitForURL(/\/api-keys\/[0-9a-f-]{36}\?created=1$/)
      expect(await page.getByRole('status').first().textContent()).toContain('Your public key is ready')

      // Copy: the clipboard holds the key the page shows, which is the stored public key.
      await page.getByRole('button', { name: 'Copy key' }).click()
      await page.getByText('Public key copied to the clipboard.').waitFor()
      const copied = await page.evaluate(() => navigator.clipboard.readText())
      expect(copied).toMatch(/^pk_[A-Za-z0-9]{36}$/)
      expect(await page.getByLabel('Public key').inputValue()).toBe(copied)
      const [stored] = await db.select().from(apiKeys).where(eq(apiKeys.name, 'Marketing site'))
      expect(stored).toMatchObject({
        publicKey: copied,
        allowedOrigins: ['example.com', `localhost:${site.port}`],
        scopes: ['ANALYTICS_WRITE', 'BLOG_READ'],
      })
      expect(await page.getByLabel('Tracking snippet').inputValue()).toBe(
        `<script async src="${dashboard}/sdk/v0.js" data-key="${copied}"></script>`,
      )

      // The origin tester answers in place with the matcher's verdict.
      await page.getByLabel('Origin to test').fill('https://www.example.com')
      await page.getByRole('button', { name: 'Test origin' }).click()
      await page.locator('#tester-result .result.ok').waitFor()
      expect(await page.locator('#tester-result').textContent()).toContain('The entry example.com matches https://www.example.com')
      await page.getByLabel('Origin to test').fill('https://evil.example.net')
      await page.getByRole('button', { name: 'Test origin' }).click()
      await page.locator('#tester-result .result.refused').waitFor()
      expect(await page.locator('#tester-result').textContent()).toContain('Origin "https://evil.example.net" is not allowed')
      await shoot(page, 'key', { fullPage: true })

      // The customer's page calls the API with the copied key.
      const allowed = await whoamiFromSite(copied)
      expect(allowed).toEqual({
        status: 200,
        body: expect.objectContaining({ businessId, keyType: 'public', origin: siteOrigin }),
      })

      await page.getByRole('link', { name: 'API keys' }).first().click()
      await page.waitForURL(`${dashboard}${KEYS}`)
      const row = page.locator('tr', { has: page.getByRole('link', { name: 'Marketing site' }) })
      expect(await row.textContent()).toContain(stored!.keyHint)
      await shoot(page, 'api-keys', { fullPage: true })

      // Revoke, with a confirmation step; the next call from the site is refused.
      await row.getByRole('link', { name: /Revoke/ }).click()
      await page.waitForURL(/\/revoke$/)
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Revoke Marketing site?')
      await page.getByRole('button', { name: 'Revoke key' }).click()
      await page.waitForURL(`${dashboard}${KEYS}?revoked=1`)
      expect(await page.locator('tr', { has: page.getByRole('link', { name: 'Marketing site' }) }).textContent()).toContain('Revoked')
      const refused = await whoamiFromSite(copied)
      expect(refused.status).toBe(401)
      expect(refused.body).toMatchObject({ error: { code: 'invalid_api_key' } })
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    "a second business's member can neither see nor touch the key",
    async () => {
      const acme = await seedBusiness(service, 'Acme Outdoor')
      const { record, key } = await seedKey(service, acme, { name: 'Marketing site', allowedOrigins: [`localhost:${site.port}`] })
      const rival = await seedBusiness(service, 'Rival Co')
      await addMember(rival, { email: 'rex@rival.example', role: 'member' })

      const page = await newPage()
      await signInAs(page, 'rex@rival.example')
      expect(await page.content()).not.toContain('Marketing site')
      expect(await page.getByText('No keys yet').count()).toBe(1)

      for (const path of ['', '/edit', '/revoke']) {
        const response = await page.goto(`${dashboard}${KEYS}/${record.id}${path}`)
        expect(response!.status()).toBe(404)
        expect(await page.content()).not.toContain(key)
      }
      // Even a well-formed revoke with this member's own CSRF token finds no such key.
      await page.goto(`${dashboard}${KEYS}`)
      const status = await page.evaluate(async (path) => {
        const csrf = (document.querySelector('input[name=csrf]') as HTMLInputElement).value
        const response = await fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ csrf }).toString(),
        })
        return response.status
      }, `${KEYS}/${record.id}/revoke`)
      expect(status).toBe(404)
      expect((await whoamiFromSite(key)).status).toBe(200)
      await page.context().close()
    },
    E2E_TIMEOUT,
  )
})
