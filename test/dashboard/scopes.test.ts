import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { apiKeys, auditEntries, keyScopeUses } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm } from './support.ts'

// Issue 10 item 3: scopes not used in the last 30 days, each with a one-click "Remove".
const db = async () => (await testDatabase()).db
const ORIGIN = 'https://www.example.com'
const DAY = 86_400_000

async function stored(id: string) {
  const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, id))
  return row!
}

/** Makes the key 60 days old, so that a scope it has not used counts as unused. */
async function makeOld(keyId: string) {
  await (await db())
    .update(apiKeys)
    .set({ createdAt: new Date(Date.now() - 60 * DAY) })
    .where(eq(apiKeys.id, keyId))
}

async function keyWithUses() {
  const service = await testService()
  const { businessId, session } = await memberOf(service)
  const site = await seedKey(service, businessId, { name: 'Shop', scopes: ['ANALYTICS_WRITE', 'BLOG_READ', 'AUDIENCE_PERSON_WRITE'] })
  expect((await call(service, '/api/v0/analytics', { key: site.key, origin: ORIGIN, body: { eventType: 'page_view' } })).status).toBe(202)
  await service.services.usage.flush()
  // The key is 60 days old: BLOG_READ was last used 40 days ago; AUDIENCE_PERSON_WRITE never.
  await makeOld(site.record.id)
  await (await db()).insert(keyScopeUses).values({ keyId: site.record.id, scope: 'BLOG_READ', lastUsedAt: new Date(Date.now() - 40 * DAY) })
  return { service, businessId, session, site }
}

function unusedOf(page: string): string[] {
  return [...page.matchAll(/<tr class="unused">\s*<th scope="row"><code>([A-Z_]+)<\/code>/g)].map((m) => m[1]!)
}

describe('unused scopes in the dashboard', () => {
  test('the page lists each scope with its last use and flags those unused for 30 days', async () => {
    const { service, session, site } = await keyWithUses()
    const page = await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()
    expect(page).toContain('2 scopes were not used in the last 30 days')
    expect(unusedOf(page).sort()).toEqual(['AUDIENCE_PERSON_WRITE', 'BLOG_READ'])
    expect(page).toContain('Confirm: remove BLOG_READ')
    expect(page).toContain('Confirm: remove AUDIENCE_PERSON_WRITE')
    expect(page).not.toContain('Confirm: remove ANALYTICS_WRITE')
    expect(page).toContain('1 month ago')
  })

  test('Remove takes the scope away through the audited key update; the key is then refused that scope', async () => {
    const { service, session, site } = await keyWithUses()
    const response = await postForm(
      service,
      `${KEYS}/${site.record.id}/remove-scope`,
      { csrf: session.csrf, scope: 'AUDIENCE_PERSON_WRITE' },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(303)
    expect((await stored(site.record.id)).scopes).toEqual(['ANALYTICS_WRITE', 'BLOG_READ'])
    const trail = await (await db())
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.keyId, site.record.id), eq(auditEntries.action, 'key.updated')))
    expect(trail).toEqual([
      expect.objectContaining({
        actor: 'member:ada@example.com',
        changes: { scopes: { from: ['ANALYTICS_WRITE', 'BLOG_READ', 'AUDIENCE_PERSON_WRITE'], to: ['ANALYTICS_WRITE', 'BLOG_READ'] } },
      }),
    ])
    const refused = await call(service, '/api/v0/audience/people', { key: site.key, origin: ORIGIN, body: { email: 'a@b.co' } })
    expect(refused.status).toBe(403)
    const page = await (await getPage(service, response.headers.get('location')!, session)).text()
    expect(page).toContain('Removed <code>AUDIENCE_PERSON_WRITE</code> from the key')
  })

  test("the last scope is not removed; forged forms and another business's member change nothing", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const lone = await seedKey(service, businessId, { scopes: ['BLOG_READ'] })
    await makeOld(lone.record.id)
    const page = await (await getPage(service, `${KEYS}/${lone.record.id}`, session)).text()
    expect(page).toContain('A key needs at least one scope')
    const last = await postForm(
      service,
      `${KEYS}/${lone.record.id}/remove-scope`,
      { csrf: session.csrf, scope: 'BLOG_READ' },
      { cookie: session.cookie },
    )
    expect(last.status).toBe(400)
    expect((await stored(lone.record.id)).scopes).toEqual(['BLOG_READ'])

    const two = await seedKey(service, businessId, { scopes: ['BLOG_READ', 'ANALYTICS_WRITE'] })
    const forged = await postForm(
      service,
      `${KEYS}/${two.record.id}/remove-scope`,
      { csrf: 'y'.repeat(43), scope: 'BLOG_READ' },
      { cookie: session.cookie },
    )
    expect(forged.status).toBe(403)
    const { session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    const foreign = await postForm(
      service,
      `${KEYS}/${two.record.id}/remove-scope`,
      { csrf: rival.csrf, scope: 'BLOG_READ' },
      { cookie: rival.cookie },
    )
    expect(foreign.status).toBe(404)
    const revoked = await seedKey(service, businessId, { scopes: ['BLOG_READ', 'ANALYTICS_WRITE'] })
    await service.services.keys.revoke(businessId, revoked.record.id, TEST_AUTHOR)
    const onRevoked = await postForm(
      service,
      `${KEYS}/${revoked.record.id}/remove-scope`,
      { csrf: session.csrf, scope: 'BLOG_READ' },
      { cookie: session.cookie },
    )
    expect(onRevoked.status).toBe(409)
    expect((await stored(two.record.id)).scopes).toEqual(['BLOG_READ', 'ANALYTICS_WRITE'])
    expect((await stored(revoked.record.id)).scopes).toEqual(['BLOG_READ', 'ANALYTICS_WRITE'])
    expect(await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.updated'))).toHaveLength(0)
  })

  test('a private key offers Remove too: members change private keys now', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const server = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ', 'MEMORY_READ'] })
    await makeOld(server.record.id)
    expect(await (await getPage(service, `${KEYS}/${server.record.id}`, session)).text()).toContain('Confirm: remove MEMORY_READ')
    const fields = { csrf: session.csrf, scope: 'MEMORY_READ' }
    expect((await postForm(service, `${KEYS}/${server.record.id}/remove-scope`, fields, { cookie: session.cookie })).status).toBe(303)
    expect((await stored(server.record.id)).scopes).toEqual(['ANALYTICS_READ'])
  })

  test("a key younger than 30 days: its unused scopes are 'not used yet', with no Remove", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const fresh = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE', 'BLOG_READ'] })
    const page = await (await getPage(service, `${KEYS}/${fresh.record.id}`, session)).text()
    expect(unusedOf(page)).toEqual([])
    expect(page).toContain('not used yet')
    expect(page).toContain('This key is less than 30 days old')
    expect(page).not.toContain('Confirm: remove')
    // Thirty-one days later, never used: both are offered.
    await (await db())
      .update(apiKeys)
      .set({ createdAt: new Date(Date.now() - 31 * DAY) })
      .where(eq(apiKeys.id, fresh.record.id))
    const later = await (await getPage(service, `${KEYS}/${fresh.record.id}`, session)).text()
    expect(unusedOf(later)).toEqual(['ANALYTICS_WRITE', 'BLOG_READ'])
  })

  test('a crafted link cannot make the page claim a change', async () => {
    const { service, session, site } = await keyWithUses()
    const page = await (await getPage(service, `${KEYS}/${site.record.id}?removed=BLOG_READ&allowed=evil.example`, session)).text()
    expect(page).not.toContain('Removed <code>')
    expect(page).not.toContain('Added <code>')
  })
})
