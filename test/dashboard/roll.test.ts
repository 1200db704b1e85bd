import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { TEST_AUTHOR, call, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm } from './support.ts'

// Rolling a public key from its page (issue 10 item 1).
const db = async () => (await testDatabase()).db
const ORIGIN = 'https://www.example.com'

async function stored(id: string) {
  const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, id))
  return row!
}

describe('rolling a key in the dashboard', () => {
  test('offers the four graces; rolling with 1 hour makes a new key with the snippet, and the old one works until then', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const old = await seedKey(service, businessId, { name: 'Shop', allowedOrigins: ['example.com'] })

    const form = await (await getPage(service, `${KEYS}/${old.record.id}/roll`, session)).text()
    for (const seconds of ['0', '3600', '86400', '604800']) expect(form).toContain(`name="graceSeconds" value="${seconds}"`)

    const before = Date.now()
    const response = await postForm(
      service,
      `${KEYS}/${old.record.id}/roll`,
      { csrf: session.csrf, graceSeconds: '3600' },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(303)
    const location = response.headers.get('location')!
    const newId = /api-keys\/([0-9a-f-]{36})\?rolled=1$/.exec(location)![1]!
    const fresh = await stored(newId)
    expect(fresh).toMatchObject({ rolledFrom: old.record.id, name: 'Shop', allowedOrigins: ['example.com'] })
    const replaced = await stored(old.record.id)
    expect(replaced.replacedBy).toBe(newId)
    const ends = replaced.expiresAt!.getTime()
    expect(ends).toBeGreaterThanOrEqual(before + 3600_000)
    expect(ends).toBeLessThanOrEqual(Date.now() + 3600_000)

    // The new key's page: the snippet with the new key, and what became of the old one.
    const page = await (await getPage(service, location, session)).text()
    expect(page).toContain(`data-key=&quot;${fresh.publicKey}&quot;`)
    expect(page).toContain('This is the new key')
    expect(page).toContain(`The old key ${old.record.keyHint} keeps working until`)
    expect(page).toContain('Rolled from')

    // Both keys answer during the grace.
    expect((await call(service, '/api/v0/whoami', { key: old.key, origin: ORIGIN })).status).toBe(200)
    expect((await call(service, '/api/v0/whoami', { key: fresh.publicKey!, origin: ORIGIN })).status).toBe(200)
    // lastUsedAt is written off the request path (contract: visible within 2 s).
    for (let i = 0; i < 40 && !(await stored(old.record.id)).lastUsedAt; i++) await Bun.sleep(50)

    // The old key's page: replaced by, when it stops, when it was last used; no snippet, no second roll.
    const oldPage = await (await getPage(service, `${KEYS}/${old.record.id}`, session)).text()
    expect(oldPage).toContain('Replaced by')
    expect(oldPage).toContain(`href="${KEYS}/${newId}"`)
    expect(oldPage).toContain('It keeps working until')
    expect(oldPage).toContain('in 1 hour')
    expect(oldPage).toMatch(/Last used: <time[^>]*>\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time> \(just now\)/)
    expect(oldPage).not.toContain(old.key)
    expect(oldPage).not.toContain('>Roll key<')

    // The trail names the member.
    const trail = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.rolled'))
    expect(trail).toEqual([expect.objectContaining({ keyId: old.record.id, actor: 'member:ada@example.com' })])
  })

  test('grace "now" ends the old key at once', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const old = await seedKey(service, businessId, { name: 'Shop' })
    const response = await postForm(
      service,
      `${KEYS}/${old.record.id}/roll`,
      { csrf: session.csrf, graceSeconds: '0' },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(303)
    const refused = await call(service, '/api/v0/whoami', { key: old.key, origin: ORIGIN })
    expect(refused.status).toBe(401)
    const oldPage = await (await getPage(service, `${KEYS}/${old.record.id}`, session)).text()
    expect(oldPage).toContain('It stopped working')
    expect(oldPage).toContain('Last used: never')
  })

  test('a grace outside the four choices is refused and nothing is rolled', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const old = await seedKey(service, businessId)
    for (const graceSeconds of ['60', '', '-1', '604801']) {
      const response = await postForm(
        service,
        `${KEYS}/${old.record.id}/roll`,
        { csrf: session.csrf, graceSeconds },
        { cookie: session.cookie },
      )
      expect(response.status).toBe(400)
    }
    expect(await (await db()).select().from(apiKeys)).toHaveLength(1)
    expect((await stored(old.record.id)).replacedBy).toBeNull()
  })

  test('private, revoked and replaced keys are not rolled here (409), and without the CSRF token nothing happens', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const server = await seedKey(service, businessId, { type: 'private' })
    const gone = await seedKey(service, businessId)
    await service.services.keys.revoke(businessId, gone.record.id, TEST_AUTHOR)
    const rolled = await seedKey(service, businessId)
    await service.services.keys.roll(businessId, rolled.record.id, 60, TEST_AUTHOR)
    for (const id of [server.record.id, gone.record.id, rolled.record.id]) {
      expect((await getPage(service, `${KEYS}/${id}/roll`, session)).status).toBe(409)
      const response = await postForm(service, `${KEYS}/${id}/roll`, { csrf: session.csrf, graceSeconds: '0' }, { cookie: session.cookie })
      expect(response.status).toBe(409)
    }
    const fresh = await seedKey(service, businessId, { name: 'Fresh' })
    const forged = await postForm(
      service,
      `${KEYS}/${fresh.record.id}/roll`,
      { csrf: 'x'.repeat(43), graceSeconds: '0' },
      { cookie: session.cookie },
    )
    expect(forged.status).toBe(403)
    expect((await stored(fresh.record.id)).replacedBy).toBeNull()
    // 3 seeded + the one rolled by the service: no key was added by a refused roll.
    expect(await (await db()).select().from(apiKeys)).toHaveLength(5)
  })

  test("another business's key answers 404 on the roll routes", async () => {
    const service = await testService()
    const { businessId } = await memberOf(service, 'Acme', 'ada@example.com')
    const key = await seedKey(service, businessId)
    const { session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    expect((await getPage(service, `${KEYS}/${key.record.id}/roll`, rival)).status).toBe(404)
    const response = await postForm(
      service,
      `${KEYS}/${key.record.id}/roll`,
      { csrf: rival.csrf, graceSeconds: '0' },
      { cookie: rival.cookie },
    )
    expect(response.status).toBe(404)
    expect((await stored(key.record.id)).replacedBy).toBeNull()
  })

  test('the list filters active, replaced, revoked and expired keys', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    await seedKey(service, businessId, { name: 'Alpha' })
    const rolled = await seedKey(service, businessId, { name: 'Bravo' })
    await service.services.keys.roll(businessId, rolled.record.id, 3600, TEST_AUTHOR)
    const gone = await seedKey(service, businessId, { name: 'Charlie' })
    await service.services.keys.revoke(businessId, gone.record.id, TEST_AUTHOR)
    const lapsed = await seedKey(service, businessId, { name: 'Delta' })
    await (await db())
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 60_000) })
      .where(eq(apiKeys.id, lapsed.record.id))

    const names = async (query: string) => {
      const page = await (await getPage(service, `${KEYS}${query}`, session)).text()
      return [...page.matchAll(/<th scope="row"><a href="[^"]+">([^<]+)<\/a>/g)].map((m) => m[1]).sort()
    }
    expect(await names('')).toEqual(['Alpha', 'Bravo', 'Bravo', 'Charlie', 'Delta'])
    expect(await names('?show=active')).toEqual(['Alpha', 'Bravo'])
    expect(await names('?show=replaced')).toEqual(['Bravo'])
    expect(await names('?show=revoked')).toEqual(['Charlie'])
    expect(await names('?show=expired')).toEqual(['Delta'])
    expect(await names('?show=nonsense')).toHaveLength(5)
    const replacedOnly = await (await getPage(service, `${KEYS}?show=replaced`, session)).text()
    expect(replacedOnly).toContain(`href="${KEYS}?show=replaced" aria-current="page"`)
  })
})

describe('the revoke page', () => {
  test('offers rolling instead for an active public key, not for a private one', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const pub = await seedKey(service, businessId)
    const priv = await seedKey(service, businessId, { type: 'private' })
    expect(await (await getPage(service, `${KEYS}/${pub.record.id}/revoke`, session)).text()).toContain(
      `<a href="${KEYS}/${pub.record.id}/roll">Roll it instead</a>`,
    )
    expect(await (await getPage(service, `${KEYS}/${priv.record.id}/revoke`, session)).text()).not.toContain('Roll it instead')
  })
})
