import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { checksumHolds } from '../../src/access/key-format.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'
import { addMember, getPage, KEYS, memberOf, postForm, signIn } from './support.ts'

// docs/dashboard.md, "Leaked keys": the banner on every page, the one-click roll that shows
// the new key once, the dismissal, and a private key used from a browser on its key page.

const URL_FOUND = 'https://github.com/acme/site/blob/abc/.env'

async function leaked(policy: 'revoke' | 'notify' = 'revoke') {
  const service = await testService({ leaks: { policy } })
  const { businessId, session } = await memberOf(service)
  const key = await seedKey(service, businessId, { type: 'private', name: 'Billing server' })
  const reported = await call(service, '/security/leaked-keys', { method: 'POST', body: { keys: [key.key], url: URL_FOUND } })
  expect(reported.status).toBe(202)
  return { service, businessId, session, key }
}

const db = async () => (await testDatabase()).db

describe('the leaked-key banner', () => {
  test('shows on every page of the business: where, when, what was done, with a roll and a dismissal', async () => {
    const { service, session, key } = await leaked()
    for (const path of [KEYS, '/dashboard/events', '/dashboard/settings/audit']) {
      const page = await (await getPage(service, path, session)).text()
      expect(page).toContain(`id="leak-${key.record.id}"`)
      expect(page).toContain('Billing server')
      expect(page).toContain(key.record.keyHint)
      expect(page).toContain(`<a href="${URL_FOUND}" rel="noopener noreferrer nofollow">`)
      expect(page).toContain('reported by someone who found it')
      expect(page).toContain('It was revoked at once')
      expect(page).toContain(`${KEYS}/${key.record.id}/leak/roll`)
      expect(page).toContain(`${KEYS}/${key.record.id}/leak/dismiss`)
      expect(page).not.toContain(key.key)
    }
  })

  test('another business sees no banner', async () => {
    const { service } = await leaked()
    const other = await seedBusiness(service, 'Other')
    await addMember(other, { email: 'bo@example.com' })
    const page = await (await getPage(service, KEYS, await signIn(service, 'bo@example.com'))).text()
    expect(page).not.toContain('leak-banner')
  })

  test('a URL that is not a web address is shown as text, never as a link', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const key = await seedKey(service, businessId, { type: 'private' })
    await call(service, '/security/leaked-keys', { method: 'POST', body: { keys: [key.key], url: 'javascript:alert(1)' } })
    const page = await (await getPage(service, KEYS, session)).text()
    expect(page).toContain('<code>javascript:alert(1)</code>')
    expect(page).not.toContain('href="javascript:')
  })

  test('one click rolls it: the new private key is shown once, works, and the banner is gone', async () => {
    const { service, session, key, businessId } = await leaked()
    const response = await postForm(
      service,
      `${KEYS}/${key.record.id}/leak/roll`,
      { csrf: session.csrf, business: businessId },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const page = await response.text()
    const shown = /id="key-value" type="text" readonly value="(sk_[A-Za-z0-9]+)"/.exec(page)?.[1]
    expect(shown).toBeDefined()
    expect(checksumHolds(shown!)).toBe(true)
    expect(page).toContain('Copy it now: it is shown this once')
    expect(page).not.toContain('leak-banner')
    expect((await call(service, '/api/v0/whoami', { key: shown! })).status).toBe(200)
    const [newRow] = await (await db()).select().from(apiKeys).where(eq(apiKeys.rolledFrom, key.record.id))
    expect(newRow!.scopes).toEqual(key.record.scopes)
    expect(newRow!.type).toBe('private')
    // The new key's page never shows it again.
    const keyPage = await (await getPage(service, `${KEYS}/${newRow!.id}`, session)).text()
    expect(keyPage).not.toContain(shown!)
    expect(await (await getPage(service, KEYS, session)).text()).not.toContain('leak-banner')
    // Rolled, and recorded as any roll.
    const trail = await (await db())
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.keyId, key.record.id), eq(auditEntries.action, 'key.rolled')))
    expect(trail).toHaveLength(1)
    expect(trail[0]!.actor).toBe('member:ada@example.com')
    // A second click finds the key already rolled: nothing more is made.
    const again = await postForm(
      service,
      `${KEYS}/${key.record.id}/leak/roll`,
      { csrf: session.csrf, business: businessId },
      { cookie: session.cookie },
    )
    expect(again.status).toBe(303)
    expect(await (await db()).select().from(apiKeys).where(eq(apiKeys.rolledFrom, key.record.id))).toHaveLength(1)
  })

  test('under LEAKED_KEY_POLICY=notify the banner says it still works, and the roll ends it at once', async () => {
    const { service, session, key, businessId } = await leaked('notify')
    expect((await call(service, '/api/v0/whoami', { key: key.key })).status).toBe(200)
    expect(await (await getPage(service, KEYS, session)).text()).toContain('It still works')
    const response = await postForm(
      service,
      `${KEYS}/${key.record.id}/leak/roll`,
      { csrf: session.csrf, business: businessId },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(200)
    expect((await errorOf(await call(service, '/api/v0/whoami', { key: key.key }))).code).toBe('expired_api_key')
  })

  test('members who are not owners see the banner without the roll, and their roll is refused', async () => {
    const { service, key, businessId } = await leaked()
    await addMember(businessId, { email: 'mo@example.com', role: 'member' })
    const member = await signIn(service, 'mo@example.com')
    const page = await (await getPage(service, KEYS, member)).text()
    expect(page).toContain(`id="leak-${key.record.id}"`)
    expect(page).not.toContain(`${KEYS}/${key.record.id}/leak/roll`)
    expect(page).toContain('An owner of the business can roll it here')
    const refused = await postForm(
      service,
      `${KEYS}/${key.record.id}/leak/roll`,
      { csrf: member.csrf, business: businessId },
      { cookie: member.cookie },
    )
    expect(refused.status).toBe(403)
    expect(await (await db()).select().from(apiKeys).where(eq(apiKeys.rolledFrom, key.record.id))).toHaveLength(0)
  })

  test("a dismissal takes the banner off every member's pages; the key page still says where it was found", async () => {
    const { service, session, key, businessId } = await leaked()
    await addMember(businessId, { email: 'mo@example.com', role: 'member' })
    const member = await signIn(service, 'mo@example.com')
    const dismissed = await postForm(
      service,
      `${KEYS}/${key.record.id}/leak/dismiss`,
      { csrf: member.csrf, business: businessId },
      { cookie: member.cookie, headers: { referer: 'http://localhost/dashboard/events' } },
    )
    expect(dismissed.status).toBe(303)
    expect(dismissed.headers.get('location')).toBe('/dashboard/events')
    for (const who of [session, member]) expect(await (await getPage(service, KEYS, who)).text()).not.toContain('leak-banner')
    const keyPage = await (await getPage(service, `${KEYS}/${key.record.id}`, session)).text()
    expect(keyPage).toContain('id="leak-notice"')
    expect(keyPage).toContain(URL_FOUND)
  })

  test('a key of another business can be neither rolled nor dismissed', async () => {
    const { service, key } = await leaked()
    const other = await seedBusiness(service, 'Other')
    await addMember(other, { email: 'bo@example.com' })
    const bo = await signIn(service, 'bo@example.com')
    for (const action of ['roll', 'dismiss']) {
      const response = await postForm(
        service,
        `${KEYS}/${key.record.id}/leak/${action}`,
        { csrf: bo.csrf, business: other },
        { cookie: bo.cookie },
      )
      expect(response.status).toBe(404)
    }
    const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, key.record.id))
    expect(row!.leakDismissedAt).toBeNull()
    expect(row!.replacedBy).toBeNull()
  })
})

describe('a private key used from a browser', () => {
  test('its key page lists the origins; the trail gets one key.browser_use entry a day', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const key = await seedKey(service, businessId, { type: 'private', name: 'Backend' })
    for (const origin of ['https://shop.example', 'https://shop.example', 'https://admin.example']) {
      expect((await call(service, '/api/v0/whoami', { key: key.key, origin })).status).toBe(200)
    }
    // A request without an Origin (a server) is no browser use.
    expect((await call(service, '/api/v0/whoami', { key: key.key })).status).toBe(200)
    await service.services.usage.flush()
    await service.services.browserUse.flush()
    const page = await (await getPage(service, `${KEYS}/${key.record.id}`, session)).text()
    expect(page).toContain('Used from a browser')
    expect(page).toMatch(/<code>https:\/\/shop\.example<\/code><\/th>\s*<td>2<\/td>/)
    expect(page).toMatch(/<code>https:\/\/admin\.example<\/code><\/th>\s*<td>1<\/td>/)
    const entries = async () =>
      (await db())
        .select()
        .from(auditEntries)
        .where(and(eq(auditEntries.keyId, key.record.id), eq(auditEntries.action, 'key.browser_use')))
    expect(await entries()).toHaveLength(1)
    expect((await entries())[0]!.changes).toEqual({ origin: { from: null, to: 'https://shop.example' } })
    // Another instance notes the same key: still one entry within the day.
    const other = await testService()
    expect((await call(other, '/api/v0/whoami', { key: key.key, origin: 'https://shop.example' })).status).toBe(200)
    await other.services.browserUse.flush()
    expect(await entries()).toHaveLength(1)
  })

  test('a public key with an Origin, and a private key without one, are no browser use', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const privateKey = await seedKey(service, businessId, { type: 'private' })
    const publicKey = await seedKey(service, businessId, { type: 'public', allowedOrigins: ['example.com'] })
    expect((await call(service, '/api/v0/whoami', { key: privateKey.key })).status).toBe(200)
    expect((await call(service, '/api/v0/whoami', { key: publicKey.key, origin: 'https://example.com' })).status).toBe(200)
    await service.services.usage.flush()
    await service.services.browserUse.flush()
    const page = await (await getPage(service, `${KEYS}/${privateKey.record.id}`, session)).text()
    expect(page).not.toContain('Used from a browser')
    expect(await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.browser_use'))).toHaveLength(0)
  })
})
