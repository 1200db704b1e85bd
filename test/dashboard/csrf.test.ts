import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, auditEntries, businesses, members, memberSessions, memberSignInLinks } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'
import { addMember, cookieFrom, hiddenValue, KEYS, memberOf, PASSWORD, postForm, signIn, signInForm } from './support.ts'

const newKey = { name: 'Site', origins: 'example.com', scopes: 'ANALYTICS_WRITE' }

async function keyCount() {
  return (await (await testDatabase()).db.select().from(apiKeys)).length
}

describe('CSRF protection of dashboard forms', () => {
  test('a form without the session token is refused with 403 and changes nothing', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await postForm(service, `${KEYS}/new`, newKey, { cookie: session.cookie })
    expect(response.status).toBe(403)
    expect(await response.text()).toContain('Nothing was changed')
    expect(await keyCount()).toBe(0)
  })

  test("another session's token is refused", async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    await addMember(await seedBusiness(service, 'Other'), { email: 'bob@example.com' })
    const other = await signIn(service, 'bob@example.com')
    const response = await postForm(service, `${KEYS}/new`, { ...newKey, csrf: other.csrf }, { cookie: session.cookie })
    expect(response.status).toBe(403)
    expect(await keyCount()).toBe(0)
  })

  test('a post from another site is refused even with the right token', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await postForm(
      service,
      `${KEYS}/new`,
      { ...newKey, csrf: session.csrf },
      {
        cookie: session.cookie,
        headers: { origin: 'https://evil.example' },
      },
    )
    expect(response.status).toBe(403)
    expect(await response.text()).toContain('https://evil.example')
    expect(await keyCount()).toBe(0)
  })

  test('a post the browser marks cross-site (no Origin sent) is refused', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await postForm(
      service,
      `${KEYS}/new`,
      { ...newKey, csrf: session.csrf },
      {
        cookie: session.cookie,
        headers: { origin: '', 'sec-fetch-site': 'cross-site' },
      },
    )
    expect(response.status).toBe(403)
    expect(await response.text()).toContain('came from a cross-site page')
    expect(await keyCount()).toBe(0)
  })

  test('the same post with the token, from the dashboard itself, is accepted', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await postForm(service, `${KEYS}/new`, { ...newKey, csrf: session.csrf }, { cookie: session.cookie })
    expect(response.status).toBe(303)
    expect(await keyCount()).toBe(1)
  })

  test('revoking without the token leaves the key active', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId)
    const response = await postForm(service, `${KEYS}/${record.id}/revoke`, {}, { cookie: session.cookie })
    expect(response.status).toBe(403)
    const [row] = await (await testDatabase()).db.select().from(apiKeys).where(eq(apiKeys.id, record.id))
    expect(row!.revokedAt).toBeNull()
  })

  test('sign-out without the token keeps the session', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await postForm(service, '/dashboard/sign-out', {}, { cookie: session.cookie })
    expect(response.status).toBe(403)
    expect(await (await testDatabase()).db.select().from(memberSessions)).toHaveLength(1)
  })

  test("sign-in needs the form's own token (login CSRF)", async () => {
    const service = await testService()
    await addMember(await seedBusiness(service))
    const form = await signInForm(service)
    const response = await postForm(service, '/dashboard/sign-in', { csrf: form.csrf, email: 'ada@example.com', password: PASSWORD })
    expect(response.status).toBe(403)
    expect(cookieFrom(response, 'keygate_session')).toBeNull()
    expect(hiddenValue(await response.text(), 'csrf')).toHaveLength(43)
  })

  test('sign-in from another site is refused', async () => {
    const service = await testService()
    await addMember(await seedBusiness(service))
    const form = await signInForm(service)
    const response = await postForm(
      service,
      '/dashboard/sign-in',
      { csrf: form.csrf, email: 'ada@example.com', password: PASSWORD },
      { cookie: form.cookie, headers: { origin: 'https://evil.example' } },
    )
    expect(response.status).toBe(403)
    expect(cookieFrom(response, 'keygate_session')).toBeNull()
  })
})

describe("issue 10's forms keep the same CSRF protection", () => {
  test('roll, allow, remove a scope, identity secret, add and remove a member: without the token, or from another site, 403 and nothing written', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const bo = await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const key = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE', 'BLOG_READ'] })
    const server = await seedKey(service, businessId, { type: 'private' })
    const db = (await testDatabase()).db
    const snapshot = async () => ({
      keys: await db.select().from(apiKeys),
      trail: (await db.select().from(auditEntries)).length,
      members: (await db.select().from(members)).length,
      links: (await db.select().from(memberSignInLinks)).length,
      secret: (await db.select({ s: businesses.identitySecret }).from(businesses)).map((b) => b.s),
      retention: (await db.select({ d: businesses.eventRetentionDays }).from(businesses)).map((b) => b.d),
    })
    const before = await snapshot()
    const forms: [string, Record<string, string>][] = [
      [`${KEYS}/${key.record.id}/roll`, { graceSeconds: '0' }],
      [`${KEYS}/${key.record.id}/allow-origin`, { origin: 'https://shop.example.net' }],
      [`${KEYS}/${server.record.id}/allow-ip`, { entry: '198.51.100.0/24' }],
      [`${KEYS}/${server.record.id}/edit`, { name: 'Server', scopes: 'ANALYTICS_READ', allowedIps: '198.51.100.0/24' }],
      [`${KEYS}/${key.record.id}/remove-scope`, { scope: 'BLOG_READ' }],
      ['/dashboard/settings/business/identity-secret', {}],
      ['/dashboard/settings/business/retention', { eventRetentionDays: '3' }],
      ['/dashboard/settings/members', { email: 'cy@example.com', role: 'owner' }],
      [`/dashboard/settings/members/${bo.id}/remove`, {}],
      [`/dashboard/settings/members/${bo.id}/link`, {}],
    ]
    for (const [path, fields] of forms) {
      const missing = await postForm(service, path, fields, { cookie: session.cookie })
      expect({ path, status: missing.status }).toEqual({ path, status: 403 })
      const crossSite = await postForm(
        service,
        path,
        { ...fields, csrf: session.csrf },
        { cookie: session.cookie, headers: { origin: 'https://evil.example' } },
      )
      expect({ path, status: crossSite.status }).toEqual({ path, status: 403 })
    }
    expect(await snapshot()).toEqual(before)
  })
})
