import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Browser, Page } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { apiKeys, businesses, keyScopeUses, keyUsageDays, keyUsageHours } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase } from '../support/database.ts'
import { behindTrustedProxy, call, seedBusiness, seedKey, testService } from '../support/service.ts'
import { shoot } from './screenshots.ts'
import { addMember, KEYS, PASSWORD } from './support.ts'

/**
 * Issue 10's dashboard views in a real headless Chromium against a loopback server: roll,
 * usage chart, allowing a refused origin, removing an unused scope, the audit trail,
 * report-only, the identity secret, the first-request panel and members; and a private
 * key's allowed IPs.
 */

const E2E_TIMEOUT = 120_000

let service: Service
let browser: Browser
let dashboard: string

beforeAll(async () => {
  if (chromiumMissing) return
  // API calls name their client address in X-Forwarded-For, as behind a trusted proxy.
  service = await testService({ clientAddress: behindTrustedProxy })
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  dashboard = `http://localhost:${service.app.server!.port}`
  browser = await launchChromium(30_000)
})

afterAll(async () => {
  await browser?.close().catch(() => {})
  await service?.app.stop(true)
  await service?.drain()
})

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  context.setDefaultTimeout(15_000)
  return context.newPage()
}

async function signInAs(page: Page, email: string) {
  await page.goto(`${dashboard}/dashboard`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${dashboard}${KEYS}`)
}

const db = async () => (await testDatabase()).db

describe.skipIf(chromiumMissing)('steering keys in a browser', () => {
  test(
    'a member rolls a public key with a day of grace; the old key says what replaced it and until when',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'ada@acme.example' })
      const old = await seedKey(service, businessId, { name: 'Marketing site', allowedOrigins: ['acme-outdoor.com'] })
      await (await db())
        .update(apiKeys)
        .set({ lastUsedAt: new Date(Date.now() - 7 * 60_000) })
        .where(eq(apiKeys.id, old.record.id))

      const page = await newPage()
      await signInAs(page, 'ada@acme.example')
      await page.getByRole('link', { name: 'Marketing site', exact: true }).click()
      await page.getByRole('link', { name: 'Roll key' }).click()
      await page.waitForURL(/\/roll$/)
      expect(await page.getByLabel(/24 hours/).isChecked()).toBe(true)
      await page.getByLabel(/^7 days/).check()
      await shoot(page, 'roll-key', { fullPage: true })
      await page.getByRole('button', { name: 'Roll key' }).click()
      await page.waitForURL(/\?rolled=1$/)

      const [fresh] = await (await db()).select().from(apiKeys).where(eq(apiKeys.rolledFrom, old.record.id))
      expect(await page.getByLabel('Public key').inputValue()).toBe(fresh!.publicKey!)
      expect(await page.getByRole('status').first().textContent()).toContain('This is the new key')
      await shoot(page, 'rolled-key', { fullPage: true })

      await page
        .locator('dd')
        .getByRole('link', { name: `Marketing site ${old.record.keyHint}` })
        .click()
      await page.waitForURL(`${dashboard}${KEYS}/${old.record.id}`)
      const notice = await page.locator('#replaced-notice').textContent()
      expect(notice).toContain('Replaced by Marketing site')
      expect(notice).toContain('It keeps working until')
      expect(notice).toContain('(in 1 week)')
      expect(notice).toContain('(7 minutes ago)')
      expect(await page.getByLabel('Public key').count()).toBe(0)
      await shoot(page, 'replaced-key', { fullPage: true })

      await page.goto(`${dashboard}${KEYS}`)
      await page
        .getByRole('link', { name: /^Replaced/ })
        .first()
        .click()
      await page.waitForURL(`${dashboard}${KEYS}?show=replaced`)
      expect(await page.locator('tbody tr').count()).toBe(1)
      await shoot(page, 'api-keys-replaced', { fullPage: true })
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    'a member reads the usage chart and allows a refused origin after previewing the list',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'bo@acme.example', role: 'member' })
      const site = await seedKey(service, businessId, {
        name: 'Web shop',
        allowedOrigins: ['acme-outdoor.com'],
        scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'],
      })
      for (let i = 0; i < 14; i++) await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://www.acme-outdoor.com' })
      for (let i = 0; i < 5; i++) await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://checkout.acme-pay.com:8443' })
      await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://scraper.example.org' })
      await service.services.usage.flush()
      // Earlier hours and days, as the recorder would have left them: a day's shape for the picture.
      const HOUR = 3_600_000
      const DAY = 24 * HOUR
      const thisHour = Date.now() - (Date.now() % HOUR)
      const today = Date.now() - (Date.now() % DAY)
      const hours = Array.from({ length: 23 }, (_, i) => ({
        at: new Date(thisHour - (i + 1) * HOUR),
        accepted: 20 + ((i * 37) % 60),
        refused: (i * 7) % 5,
      }))
      const days = Array.from({ length: 6 }, (_, i) => ({
        at: new Date(today - (i + 1) * DAY),
        accepted: 900 + ((i * 311) % 700),
        refused: 10 + ((i * 13) % 40),
      }))
      const rows = (table: typeof hours) =>
        table.flatMap((p) => [
          { keyId: site.record.id, at: p.at, outcome: 'accepted', count: p.accepted },
          ...(p.refused > 0 ? [{ keyId: site.record.id, at: p.at, outcome: 'origin_not_allowed', count: p.refused }] : []),
        ])
      await (await db()).insert(keyUsageHours).values(rows(hours))
      await (await db()).insert(keyUsageDays).values(rows(days))
      const sum = (table: typeof hours, field: 'accepted' | 'refused') => table.reduce((n, p) => n + p[field], 0)

      const page = await newPage()
      await signInAs(page, 'bo@acme.example')
      await page.goto(`${dashboard}${KEYS}/${site.record.id}`)
      const dayTotals = new RegExp(`Accepted ${14 + sum(hours, 'accepted')}\\s+Refused ${6 + sum(hours, 'refused')}`)
      expect(await page.locator('#usage-totals').textContent()).toMatch(dayTotals)
      expect(await page.locator('svg.chart .bar').count()).toBe(24)
      // The current hour's bar holds both colours.
      expect(await page.locator('svg.chart .bar').last().locator('rect[fill="#2f6fdb"]').count()).toBe(1)
      expect(await page.locator('svg.chart .bar').last().locator('rect[fill="#c8372d"]').count()).toBe(1)
      await shoot(page.locator('#usage'), 'key-usage')
      await page.getByRole('link', { name: 'Last 7 days' }).click()
      await page.waitForURL(/range=7d/)
      expect(await page.locator('svg.chart .bar').count()).toBe(7)
      const weekTotals = new RegExp(`Accepted ${14 + sum(days, 'accepted')}\\s+Refused ${6 + sum(days, 'refused')}`)
      expect(await page.locator('#usage-totals').textContent()).toMatch(weekTotals)
      await shoot(page.locator('#usage'), 'key-usage-7d')
      await page.goto(`${dashboard}${KEYS}/${site.record.id}`)

      await page.locator('summary', { hasText: 'Allow https://checkout.acme-pay.com:8443' }).click()
      const preview = page.locator('.allow-preview').first()
      await preview.waitFor()
      expect(await preview.locator('li').allTextContents()).toEqual(['acme-outdoor.com', 'https://checkout.acme-pay.com:8443 new'])
      await shoot(page.locator('#refused-origins'), 'allow-origin')
      await preview.getByRole('button', { name: 'Confirm: allow https://checkout.acme-pay.com:8443' }).click()
      await page.waitForURL(/\?allowed=/)
      expect(await page.getByRole('status').first().textContent()).toContain(
        'Added https://checkout.acme-pay.com:8443 to the allowed origins',
      )
      const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, site.record.id))
      expect(row!.allowedOrigins).toEqual(['acme-outdoor.com', 'https://checkout.acme-pay.com:8443'])
      expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://checkout.acme-pay.com:8443' })).status).toBe(200)
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    'a member removes a scope unused for 30 days, after seeing the scopes it leaves',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'cy@acme.example', role: 'member' })
      const site = await seedKey(service, businessId, {
        name: 'Blog widget',
        allowedOrigins: ['acme-outdoor.com'],
        scopes: ['ANALYTICS_WRITE', 'BLOG_READ', 'FLOW_TRIGGER'],
      })
      for (let i = 0; i < 3; i++)
        await call(service, '/api/v0/analytics', { key: site.key, origin: 'https://acme-outdoor.com', body: { eventType: 'page_view' } })
      await service.services.usage.flush()
      // A key of two months, whose blog scope was last used 45 days ago.
      await (await db())
        .update(apiKeys)
        .set({ createdAt: new Date(Date.now() - 60 * 86_400_000) })
        .where(eq(apiKeys.id, site.record.id))
      await (await db())
        .insert(keyScopeUses)
        .values({ keyId: site.record.id, scope: 'BLOG_READ', lastUsedAt: new Date(Date.now() - 45 * 86_400_000) })

      const page = await newPage()
      await signInAs(page, 'cy@acme.example')
      await page.goto(`${dashboard}${KEYS}/${site.record.id}`)
      const panel = page.locator('#scopes')
      expect(await panel.locator('tr.unused th code').allTextContents()).toEqual(['BLOG_READ', 'FLOW_TRIGGER'])
      await panel.locator('summary', { hasText: 'Remove FLOW_TRIGGER' }).click()
      const preview = panel.locator('details[open] .allow-preview')
      expect(await preview.locator('li.removed').textContent()).toContain('FLOW_TRIGGER')
      await shoot(panel, 'unused-scopes')
      await preview.getByRole('button', { name: 'Confirm: remove FLOW_TRIGGER' }).click()
      await page.waitForURL(/\?removed=FLOW_TRIGGER/)
      expect(await page.getByRole('status').first().textContent()).toContain('Removed FLOW_TRIGGER')
      const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, site.record.id))
      expect(row!.scopes).toEqual(['ANALYTICS_WRITE', 'BLOG_READ'])
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    'a member reads the audit trail of the business and of one key, newest first, fields from -> to',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'di@acme.example', role: 'member' })
      const site = await seedKey(service, businessId, {
        name: 'Checkout',
        allowedOrigins: ['acme-outdoor.com'],
        scopes: ['ANALYTICS_WRITE', 'FLOW_TRIGGER'],
      })
      const keys = service.services.keys
      await keys.update(
        businessId,
        site.record.id,
        { allowedOrigins: ['acme-outdoor.com', 'https://pay.acme-outdoor.com:8443'], rateLimit: { limit: 120, windowSeconds: 60 } },
        { actor: 'member:ann@acme.example' },
      )
      await keys.update(businessId, site.record.id, { scopes: ['ANALYTICS_WRITE'] }, { actor: 'admin' })

      const page = await newPage()
      await signInAs(page, 'di@acme.example')
      await page.getByRole('link', { name: 'Audit trail' }).click()
      await page.waitForURL(`${dashboard}/dashboard/settings/audit`)
      const entries = page.locator('li.entry')
      // Three key entries, then di's own addition to the business (by the operator).
      expect(await entries.count()).toBe(4)
      expect(await entries.last().textContent()).toContain('Member added')
      expect(await entries.first().locator('.entry-head').textContent()).toContain('by an operator (admin API)')
      expect(await entries.nth(1).locator('table.changes').textContent()).toMatch(/Rate limit\s*none\s*→\s*120 per 60 s/)
      await shoot(page, 'audit-trail', { fullPage: true })

      await entries
        .first()
        .getByRole('link', { name: /Checkout/ })
        .click()
      await page.waitForURL(`${dashboard}${KEYS}/${site.record.id}`)
      expect(await page.locator('#trail li.entry').count()).toBe(3)
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    'a member turns report-only on in the key form and the key page carries the banner',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'ed@acme.example', role: 'member' })
      const site = await seedKey(service, businessId, { name: 'New landing page', allowedOrigins: ['acme-outdoor.com'] })

      const page = await newPage()
      await signInAs(page, 'ed@acme.example')
      await page.goto(`${dashboard}${KEYS}/${site.record.id}/edit`)
      await page.getByLabel('Report only: log refused origins, do not refuse them').check()
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.waitForURL(/\?saved=1$/)
      expect(await page.locator('#report-only-banner').textContent()).toContain('Report only.')
      expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://preview.acme-cdn.net' })).status).toBe(200)
      await shoot(page, 'report-only')
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    "a member limits a private key to its servers' addresses, then allows a refused network in one click",
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'jo@acme.example', role: 'member' })
      const server = await seedKey(service, businessId, {
        type: 'private',
        name: 'Order service',
        scopes: ['ANALYTICS_READ', 'AUDIENCE_PERSON_READ'],
      })
      const from = (address: string) => call(service, '/api/v0/whoami', { key: server.key, headers: { 'x-forwarded-for': address } })
      const stored = async () => (await (await db()).select().from(apiKeys).where(eq(apiKeys.id, server.record.id)))[0]!

      const page = await newPage()
      await signInAs(page, 'jo@acme.example')
      await page.goto(`${dashboard}${KEYS}/${server.record.id}`)
      await page.getByRole('link', { name: 'Edit', exact: true }).click()
      await page.waitForURL(/\/edit$/)
      expect(await page.getByLabel('Allowed origins').count()).toBe(0)
      await page.getByLabel('Allowed IPs').fill('203.0.113.7\n198.51.100.7/24\n2001:db8::/48')
      await page.getByRole('button', { name: 'Save changes' }).click()
      // A range with host bits set: explained next to the field with the range meant, nothing stored.
      await page.locator('#allowed-ips-error li').waitFor()
      expect(await page.locator('#allowed-ips-error li').allTextContents()).toEqual([
        expect.stringContaining('"198.51.100.7/24" has host bits set: did you mean 198.51.100.0/24?'),
      ])
      expect((await stored()).allowedIps).toEqual([])
      await shoot(page.locator('form.key-form'), 'private-key-form')
      await page.getByLabel('Allowed IPs').fill('203.0.113.7\n198.51.100.0/24\n2001:db8::/48')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.waitForURL(/\?saved=1$/)
      expect((await stored()).allowedIps).toEqual(['203.0.113.7', '198.51.100.0/24', '2001:db8::/48'])

      // A second server, outside the list, is refused; so is a stray IPv6 address.
      for (let i = 0; i < 6; i++) expect((await from('192.0.2.44')).status).toBe(403)
      for (let i = 0; i < 2; i++) expect((await from('2001:db8:85a3::8a2e:370:7334')).status).toBe(403)
      expect((await from('198.51.100.20')).status).toBe(200)
      await service.services.usage.flush()
      await page.reload()
      const panel = page.locator('#refused-ips')
      expect(await panel.locator('tbody th code').allTextContents()).toEqual(['192.0.2.44', '2001:db8:85a3::8a2e:370:7334'])
      await panel.locator('summary', { hasText: 'Allow 192.0.2.0/24' }).click()
      const preview = panel.locator('details[open] .allow-preview')
      expect(await preview.locator('li').allTextContents()).toEqual(['203.0.113.7', '198.51.100.0/24', '2001:db8::/48', '192.0.2.0/24 new'])
      await shoot(panel, 'refused-ips')
      await preview.getByRole('button', { name: 'Confirm: allow 192.0.2.0/24' }).click()
      await page.waitForURL(/\?allowed=/)
      expect(await page.getByRole('status').first().textContent()).toContain('Added 192.0.2.0/24 to the allowed IPs')
      expect(await panel.locator('tbody tr').first().textContent()).toContain('Allowed now by 192.0.2.0/24')
      expect((await stored()).allowedIps).toEqual(['203.0.113.7', '198.51.100.0/24', '2001:db8::/48', '192.0.2.0/24'])
      expect((await from('192.0.2.45')).status).toBe(200)
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    'an owner sets the identity secret, copies it once, and the page never shows it again',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'fay@acme.example', role: 'owner' })

      const page = await newPage()
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dashboard })
      await signInAs(page, 'fay@acme.example')
      await page.getByRole('link', { name: 'Identity secret' }).click()
      await page.waitForURL(`${dashboard}/dashboard/settings/business`)
      expect(await page.locator('#secret-status').textContent()).toContain('Not set')
      await page.locator('summary', { hasText: 'Set a secret' }).click()
      await page.getByRole('button', { name: 'Confirm: set a secret' }).click()
      await page.locator('#new-secret').waitFor()
      const [row] = await (await db()).select({ secret: businesses.identitySecret }).from(businesses).where(eq(businesses.id, businessId))
      expect(await page.getByLabel('Identity secret', { exact: true }).inputValue()).toBe(row!.secret!)
      await page.getByRole('button', { name: 'Copy secret' }).click()
      await page.getByText('copied to the clipboard').waitFor()
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(row!.secret!)
      await shoot(page, 'identity-secret', { fullPage: true })

      await page.goto(`${dashboard}/dashboard/settings/business`)
      expect(await page.content()).not.toContain(row!.secret!)
      expect(await page.locator('#secret-status').textContent()).toContain('has an identity secret')
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    "a new key's page waits for the first request and says when it arrived, without a reload",
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'gus@acme.example', role: 'member' })
      const site = await seedKey(service, businessId, { name: 'Fresh site', allowedOrigins: ['acme-outdoor.com'] })

      const page = await newPage()
      await signInAs(page, 'gus@acme.example')
      await page.goto(`${dashboard}${KEYS}/${site.record.id}`)
      expect(await page.locator('#first-request').textContent()).toContain('Waiting for the first request…')
      await shoot(page.locator('#first-request'), 'first-request-waiting')

      expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://www.acme-outdoor.com' })).status).toBe(200)
      await page.locator('#first-request.received').waitFor()
      const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, site.record.id))
      const stamp = `${row!.lastUsedAt!.toISOString().slice(0, 16).replace('T', ' ')} UTC`
      expect(await page.locator('#first-request').textContent()).toContain(`First request received at ${stamp}.`)
      expect(page.url()).toBe(`${dashboard}${KEYS}/${site.record.id}`)
      await shoot(page.locator('section', { has: page.locator('#first-request') }), 'first-request')
      await page.context().close()
    },
    E2E_TIMEOUT,
  )

  test(
    'an owner adds a member, who signs in through the link; removing them signs them out at once',
    async () => {
      const businessId = await seedBusiness(service, 'Acme Outdoor')
      await addMember(businessId, { email: 'hal@acme.example', role: 'owner' })

      const owner = await newPage()
      await signInAs(owner, 'hal@acme.example')
      await owner.getByRole('link', { name: 'Members' }).click()
      await owner.waitForURL(`${dashboard}/dashboard/settings/members`)
      await owner.getByLabel('Email').fill('ivy@acme.example')
      await owner.locator('#role-member').check()
      await owner.getByRole('button', { name: 'Add member' }).click()
      await owner.locator('#new-link').waitFor()
      const link = await owner.getByLabel('Sign-in link', { exact: true }).inputValue()
      expect(link).toStartWith(`${dashboard}/dashboard/sign-in/link?token=`)
      await shoot(owner, 'members', { fullPage: true })

      // Ivy opens the link in her own browser, chooses a password and is in.
      const ivy = await newPage()
      await ivy.goto(link)
      await ivy.getByLabel('New password').fill(PASSWORD)
      await ivy.getByLabel('Repeat the password').fill(PASSWORD)
      await ivy.getByRole('button', { name: 'Save password and sign in' }).click()
      await ivy.waitForURL(`${dashboard}${KEYS}`)
      expect(await ivy.locator('.who').textContent()).toBe('ivy@acme.example · member')

      await owner.goto(`${dashboard}/dashboard/settings/members`)
      await owner.locator('summary', { hasText: 'Remove ivy@acme.example' }).click()
      await owner.getByRole('button', { name: 'Confirm: remove ivy@acme.example' }).click()
      await owner.waitForURL(/\?removed=1$/)
      expect(await owner.locator('tbody').textContent()).not.toContain('ivy@acme.example')

      await ivy.reload()
      expect(ivy.url()).toStartWith(`${dashboard}/dashboard/sign-in`)
      await owner.context().close()
      await ivy.context().close()
    },
    E2E_TIMEOUT,
  )
})
