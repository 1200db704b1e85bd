import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { checksumHolds } from '../../src/access/key-format.ts'
import { testDatabase } from '../support/database.ts'
import { behindTrustedProxy, call, errorOf, testService } from '../support/service.ts'
import { addMember, getPage, KEYS, memberOf, postForm, signIn } from './support.ts'

// Owners make private keys in the dashboard (docs/dashboard.md, "Who may do what"): the same
// rules as the admin API, the key shown once, audited as any creation.

const db = async () => (await testDatabase()).db

describe('private keys from the dashboard', () => {
  test('an owner creates one with scopes, expiry and allowed IPs: shown once, working, audited under the owner', async () => {
    const service = await testService({ clientAddress: behindTrustedProxy })
    const { businessId, session } = await memberOf(service)
    expect(await (await getPage(service, KEYS, session)).text()).toContain(`${KEYS}/new-private`)
    const form = await getPage(service, `${KEYS}/new-private`, session)
    expect(form.status).toBe(200)
    expect(await form.text()).toContain('Create a private key')
    const expiresOn = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10)
    const response = await postForm(
      service,
      `${KEYS}/new-private`,
      {
        csrf: session.csrf,
        business: businessId,
        name: 'Billing server',
        scopes: ['ANALYTICS_READ', 'MEMORY_READ'],
        expiresOn,
        allowedIps: '203.0.113.0/24',
      },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(200)
    const page = await response.text()
    const key = /id="key-value" type="text" readonly value="(sk_[A-Za-z0-9]+)"/.exec(page)?.[1]
    expect(key).toBeDefined()
    expect(checksumHolds(key!)).toBe(true)
    expect(page).toContain('Copy it now: it is shown this once')
    const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.businessId, businessId))
    expect(row).toMatchObject({
      type: 'private',
      name: 'Billing server',
      scopes: ['ANALYTICS_READ', 'MEMORY_READ'],
      allowedIps: ['203.0.113.0/24'],
      publicKey: null,
    })
    expect(row!.expiresAt!.toISOString().slice(0, 10)).toBe(expiresOn)
    // It works from an allowed address, and only there.
    expect((await call(service, '/api/v0/whoami', { key: key!, headers: { 'x-forwarded-for': '203.0.113.9' } })).status).toBe(200)
    expect((await errorOf(await call(service, '/api/v0/whoami', { key: key!, headers: { 'x-forwarded-for': '198.51.100.9' } }))).code).toBe(
      'ip_not_allowed',
    )
    // Never shown again.
    for (const path of [KEYS, `${KEYS}/${row!.id}`]) expect(await (await getPage(service, path, session)).text()).not.toContain(key!)
    const [entry] = await (await db())
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.keyId, row!.id), eq(auditEntries.action, 'key.created')))
    expect(entry!.actor).toBe('member:ada@example.com')
    expect(JSON.stringify(entry)).not.toContain(key!)
  })

  test("the admin API's rules: an allowed IP that is no address, no scope: 400, nothing made", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const response = await postForm(
      service,
      `${KEYS}/new-private`,
      { csrf: session.csrf, business: businessId, name: 'x', allowedIps: 'not an address' },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(400)
    const page = await response.text()
    expect(page).toContain('The key was not created')
    expect(page).not.toMatch(/value="sk_/)
    expect(await (await db()).select().from(apiKeys)).toHaveLength(0)
  })

  test('a member who is not an owner sees no button and is refused: nothing made', async () => {
    const service = await testService()
    const { businessId } = await memberOf(service)
    await addMember(businessId, { email: 'mo@example.com', role: 'member' })
    const mo = await signIn(service, 'mo@example.com')
    expect(await (await getPage(service, KEYS, mo)).text()).not.toContain(`${KEYS}/new-private`)
    expect((await getPage(service, `${KEYS}/new-private`, mo)).status).toBe(403)
    const refused = await postForm(
      service,
      `${KEYS}/new-private`,
      { csrf: mo.csrf, business: businessId, name: 'sneaky', scopes: 'ANALYTICS_READ' },
      { cookie: mo.cookie },
    )
    expect(refused.status).toBe(403)
    expect(await (await db()).select().from(apiKeys)).toHaveLength(0)
  })
})
