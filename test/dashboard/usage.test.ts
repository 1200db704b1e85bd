import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { narrowestEntry } from '../../src/dashboard/narrowest.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm } from './support.ts'

// Issue 10 item 2: a key's usage chart and its refused origins, with a one-click "Allow".
const db = async () => (await testDatabase()).db
const ALLOWED = 'https://www.example.com'
const SHOP = 'https://shop.example.net:8443'

async function stored(id: string) {
  const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, id))
  return row!
}

async function usedKey() {
  const service = await testService()
  const { businessId, session } = await memberOf(service)
  const site = await seedKey(service, businessId, { name: 'Shop', allowedOrigins: ['example.com'] })
  for (const origin of [ALLOWED, ALLOWED, SHOP, SHOP, SHOP, 'https://evil.example.org']) {
    await call(service, '/api/v0/whoami', { key: site.key, origin })
  }
  await service.services.usage.flush()
  return { service, businessId, session, site }
}

describe('narrowestEntry', () => {
  test.each([
    ['https://shop.example.com', 'https://shop.example.com'],
    ['https://shop.example.com:8443', 'https://shop.example.com:8443'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['https://example.com', 'https://example.com'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['https://[::1]:8443', 'https://[::1]:8443'],
    ['https://foo.github.io', 'https://foo.github.io'],
  ])('%s -> exactly %s, never its whole domain', (origin, entry) => {
    expect(narrowestEntry(origin)).toEqual({ ok: true, entry })
  })

  test.each([
    'null',
    '(no Origin header)',
    'https://Example.com',
    'https://example.com:443',
    'https://example.com/',
    'file://x',
    'https://github.io',
    'https://a.unknowntld',
  ])('%s: no entry is offered, with a reason', (origin) => {
    const result = narrowestEntry(origin)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason.length).toBeGreaterThan(10)
  })
})

describe("a key's usage in the dashboard", () => {
  test('the page charts the last 24 hours by hour with totals, and refused origins with their counts', async () => {
    const { service, session, site } = await usedKey()
    const page = await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()
    expect(page).toContain('<svg class="chart"')
    expect(page.match(/<g class="bar">/g)).toHaveLength(24)
    expect(page).toMatch(/Accepted <strong>2<\/strong>/)
    expect(page).toMatch(/Refused <strong>4<\/strong>/)
    expect(page).toContain('<code>origin_not_allowed</code> 4')
    expect(page).toContain('aria-label="Accepted and refused requests over the last 24 hours, by hour: 2 accepted, 4 refused."')
    // The most frequent refused origin first, with its count and an Allow that previews the list.
    const rows = [...page.matchAll(/<th scope="row"><code>([^<]+)<\/code>[\s\S]*?<td>(\d+)<\/td>/g)].map((m) => [m[1], m[2]])
    expect(rows).toEqual([
      [SHOP, '3'],
      ['https://evil.example.org', '1'],
    ])
    expect(page).toContain(`Adds <code>${SHOP}</code>`)
    expect(page).toMatch(/<li><code>example\.com<\/code><\/li><li class="added"><code>https:\/\/shop\.example\.net:8443<\/code>/)
    expect(page).toContain(`<input type="hidden" name="origin" value="${SHOP}">`)
  })

  test('beyond the 50 most frequent refused origins, the page says how many more requests there were', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId, { name: 'Shop', allowedOrigins: ['example.com'] })
    const at = Date.now()
    // 60 origins, the i-th seen i + 1 times: the 50 shown are seen 11-60 times, the other ten 55 times in all.
    for (let i = 0; i < 60; i++) {
      for (let n = 0; n <= i; n++) service.services.usage.origin(site.record.id, `https://site-${i}.example.org`, false, at)
    }
    await service.services.usage.flush()
    const page = await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()
    expect(page.match(/<th scope="row"><code>https:\/\/site-\d+\.example\.org<\/code>/g)).toHaveLength(50)
    expect(page).toContain('And 55 more requests from other origins.')
  })

  test('the last 7 days, by day: seven bars', async () => {
    const { service, session, site } = await usedKey()
    const page = await (await getPage(service, `${KEYS}/${site.record.id}?range=7d`, session)).text()
    expect(page.match(/<g class="bar">/g)).toHaveLength(7)
    expect(page).toMatch(/Accepted <strong>2<\/strong>/)
    expect(page).toContain('?range=7d#usage" aria-current="page"')
  })

  test('Allow adds exactly the origin through the key service: stored, audited as the member, and served next time', async () => {
    const { service, session, site } = await usedKey()
    const response = await postForm(
      service,
      `${KEYS}/${site.record.id}/allow-origin`,
      { csrf: session.csrf, origin: SHOP },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${KEYS}/${site.record.id}?allowed=${encodeURIComponent(SHOP)}#refused-origins`)
    expect((await stored(site.record.id)).allowedOrigins).toEqual(['example.com', SHOP])
    const trail = await (await db())
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.keyId, site.record.id), eq(auditEntries.action, 'key.updated')))
    expect(trail).toEqual([
      expect.objectContaining({
        actor: 'member:ada@example.com',
        changes: { allowedOrigins: { from: ['example.com'], to: ['example.com', SHOP] } },
      }),
    ])
    expect((await call(service, '/api/v0/whoami', { key: site.key, origin: SHOP })).status).toBe(200)
    // Narrow: another host or port of the same site is still refused.
    expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://shop.example.net' })).status).toBe(403)
    expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://www.shop.example.net:8443' })).status).toBe(403)
    // The page now says it is allowed, and a second click changes nothing.
    const page = await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()
    expect(page).toContain(`Allowed now by <code>${SHOP}</code>`)
    const again = await postForm(
      service,
      `${KEYS}/${site.record.id}/allow-origin`,
      { csrf: session.csrf, origin: SHOP },
      { cookie: session.cookie },
    )
    expect(again.status).toBe(303)
    expect((await stored(site.record.id)).allowedOrigins).toEqual(['example.com', SHOP])
    expect(await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.updated'))).toHaveLength(1)
  })

  test('an origin with no narrow entry, a forged form and another business change nothing and write no entry', async () => {
    const { service, session, site } = await usedKey()
    for (const origin of ['(no Origin header)', 'null', 'example.net', 'https://github.io']) {
      const response = await postForm(
        service,
        `${KEYS}/${site.record.id}/allow-origin`,
        { csrf: session.csrf, origin },
        { cookie: session.cookie },
      )
      expect({ origin, status: response.status }).toEqual({ origin, status: 400 })
    }
    const forged = await postForm(
      service,
      `${KEYS}/${site.record.id}/allow-origin`,
      { csrf: 'x'.repeat(43), origin: SHOP },
      { cookie: session.cookie },
    )
    expect(forged.status).toBe(403)
    const crossSite = await postForm(
      service,
      `${KEYS}/${site.record.id}/allow-origin`,
      { csrf: session.csrf, origin: SHOP },
      { cookie: session.cookie, headers: { origin: 'https://evil.example.org' } },
    )
    expect(crossSite.status).toBe(403)
    const { session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    const foreign = await postForm(
      service,
      `${KEYS}/${site.record.id}/allow-origin`,
      { csrf: rival.csrf, origin: SHOP },
      { cookie: rival.cookie },
    )
    expect(foreign.status).toBe(404)
    expect((await getPage(service, `${KEYS}/${site.record.id}`, rival)).status).toBe(404)
    expect((await stored(site.record.id)).allowedOrigins).toEqual(['example.com'])
    expect(await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.updated'))).toHaveLength(0)
  })
})
