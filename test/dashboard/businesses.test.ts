import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accounts, apiKeys, auditEntries, memberSessions } from '../../db/schema/index.ts'
import { createMemberService } from '../../src/members/service.ts'
import { testDatabase } from '../support/database.ts'
import { TEST_AUTHOR, seedBusiness, seedKey, testService } from '../support/service.ts'
import { addMember, getPage, hiddenValue, KEYS, memberRows, PASSWORD, postForm, signIn, type Session } from './support.ts'

// Issue 33 item 1: one person, several businesses, one sign-in and a switcher.
const db = async () => (await testDatabase()).db
const AUDIT = '/dashboard/settings/audit'

/** Ada: owner of Acme (her first business), member of Bravo. Each business has a key. */
async function adaInTwo() {
  const service = await testService()
  const acme = await seedBusiness(service, 'Acme')
  const bravo = await seedBusiness(service, 'Bravo')
  await addMember(acme, { email: 'ada@example.com', role: 'owner' })
  await addMember(bravo, { email: 'ada@example.com', role: 'member', password: null })
  const acmeKey = await seedKey(service, acme, { name: 'Acme shop' })
  const bravoKey = await seedKey(service, bravo, { name: 'Bravo blog' })
  const session = await signIn(service, 'ada@example.com')
  const rows = await memberRows()
  const membership = (businessId: string) => rows.find((m) => m.businessId === businessId)!.id
  return { service, acme, bravo, acmeKey, bravoKey, session, membership }
}

async function switchTo(service: Awaited<ReturnType<typeof testService>>, session: Session, memberId: string, next = KEYS) {
  return postForm(service, '/dashboard/switch', { csrf: session.csrf, member: memberId, next }, { cookie: session.cookie })
}

describe('one person in several businesses', () => {
  test('one sign-in opens the business joined first; the switcher lists the others with the role in each', async () => {
    const { service, session, membership, bravo } = await adaInTwo()
    const page = await (await getPage(service, KEYS, session)).text()
    expect(page).toContain('<span class="business">Acme</span>')
    expect(page).toContain('ada@example.com · owner')
    expect(page).toContain('Acme shop')
    expect(page).not.toContain('Bravo blog')
    // The switcher offers Bravo (not Acme, shown already), as the member she is there.
    const menu = page.slice(page.indexOf('class="switcher-menu"'), page.indexOf('</details>'))
    expect(menu).toContain(`name="member" value="${membership(bravo)}"`)
    expect(menu).toMatch(/Bravo <span class="muted small">member<\/span>/)
    expect(menu).not.toContain('Acme')
    expect(await (await db()).select().from(accounts)).toHaveLength(1)
  })

  test("switching shows the other business on every page, with its role; the first business's key is then a 404", async () => {
    const { service, session, membership, bravo, acmeKey, bravoKey } = await adaInTwo()
    const switched = await switchTo(service, session, membership(bravo), '/dashboard/settings/audit')
    expect(switched.status).toBe(303)
    expect(switched.headers.get('location')).toBe(AUDIT)
    const list = await (await getPage(service, KEYS, session)).text()
    expect(list).toContain('<span class="business">Bravo</span>')
    expect(list).toContain('ada@example.com · member')
    expect(list).toContain('Bravo blog')
    expect(list).not.toContain('Acme shop')
    expect((await getPage(service, `${KEYS}/${acmeKey.record.id}`, session)).status).toBe(404)
    expect((await getPage(service, `${KEYS}/${bravoKey.record.id}`, session)).status).toBe(200)
    // Roles are per business: a member of Bravo may not add members there.
    const refused = await postForm(
      service,
      '/dashboard/settings/members',
      { csrf: session.csrf, email: 'x@example.com', role: 'member' },
      { cookie: session.cookie },
    )
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('only owners of Bravo may add members')
  })

  test('a switch lands on the same section, or on the keys when the page named one key', async () => {
    const { service, session, membership, bravo, acme } = await adaInTwo()
    expect((await switchTo(service, session, membership(bravo), '/dashboard/events')).headers.get('location')).toBe('/dashboard/events')
    expect((await switchTo(service, session, membership(acme), `${KEYS}/some-key`)).headers.get('location')).toBe(KEYS)
    expect((await switchTo(service, session, membership(bravo), 'https://evil.example/')).headers.get('location')).toBe(KEYS)
  })

  test("a switch to someone else's membership, or to a malformed id, is a 404 and changes nothing", async () => {
    const { service, session } = await adaInTwo()
    const rival = await seedBusiness(service, 'Rival')
    const rex = await addMember(rival, { email: 'rex@rival.example' })
    for (const member of [rex.id, 'not-a-uuid', '']) {
      const response = await switchTo(service, session, member)
      expect(response.status).toBe(404)
    }
    expect(await (await getPage(service, KEYS, session)).text()).toContain('<span class="business">Acme</span>')
    const [stored] = await (await db()).select().from(memberSessions)
    expect(stored!.memberId).not.toBe(rex.id)
  })

  test('a switch is a form: without the session token it changes nothing', async () => {
    const { service, session, membership, bravo } = await adaInTwo()
    const response = await postForm(service, '/dashboard/switch', { csrf: 'forged', member: membership(bravo) }, { cookie: session.cookie })
    expect(response.status).toBe(403)
    expect(await (await getPage(service, KEYS, session)).text()).toContain('<span class="business">Acme</span>')
  })

  test('every form carries the business it showed; sent after a switch in another tab, it changes nothing', async () => {
    const { service, session, membership, acme, bravo, acmeKey } = await adaInTwo()
    const acmePage = await (await getPage(service, `${KEYS}/${acmeKey.record.id}/revoke`, session)).text()
    expect(hiddenValue(acmePage, 'business')).toBe(acme)
    // Signing out and switching act alike from any tab: their forms carry no business.
    const topbar = acmePage.slice(acmePage.indexOf('<header'), acmePage.indexOf('</header>'))
    expect(topbar).toContain('action="/dashboard/sign-out"')
    expect(topbar).not.toContain('name="business"')
    // The other tab switches to Bravo; this tab's Acme form is sent afterwards.
    await switchTo(service, session, membership(bravo))
    const create = await postForm(
      service,
      `${KEYS}/new`,
      { csrf: session.csrf, business: acme, name: 'Made in the wrong business', scopes: 'ANALYTICS_WRITE', origins: 'example.com' },
      { cookie: session.cookie },
    )
    expect(create.status).toBe(409)
    expect(await create.text()).toContain('You have since switched to Bravo')
    expect(await (await db()).select().from(apiKeys).where(eq(apiKeys.name, 'Made in the wrong business'))).toHaveLength(0)
    // The same form for the business shown goes through, and lands in Bravo.
    const made = await postForm(
      service,
      `${KEYS}/new`,
      { csrf: session.csrf, business: bravo, name: 'Bravo landing', scopes: 'ANALYTICS_WRITE', origins: 'example.com' },
      { cookie: session.cookie },
    )
    expect(made.status).toBe(303)
    const [key] = await (await db()).select().from(apiKeys).where(eq(apiKeys.name, 'Bravo landing'))
    expect(key!.businessId).toBe(bravo)
  })

  test("a change is recorded in the trail of the business shown, under the person's email, and only there", async () => {
    const { service, session, membership, acme, bravo, bravoKey } = await adaInTwo()
    await switchTo(service, session, membership(bravo))
    const revoked = await postForm(
      service,
      `${KEYS}/${bravoKey.record.id}/revoke`,
      { csrf: session.csrf, business: bravo },
      { cookie: session.cookie },
    )
    expect(revoked.status).toBe(303)
    const entries = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.revoked'))
    expect(entries).toEqual([expect.objectContaining({ businessId: bravo, actor: 'member:ada@example.com', keyId: bravoKey.record.id })])
    const trail = await (await getPage(service, AUDIT, session)).text()
    expect(trail).toContain('<h1>Audit trail of Bravo</h1>')
    expect(trail).toContain('data-action="key.revoked"')
    await switchTo(service, session, membership(acme))
    const acmeTrail = await (await getPage(service, AUDIT, session)).text()
    expect(acmeTrail).toContain('<h1>Audit trail of Acme</h1>')
    expect(acmeTrail).not.toContain('data-action="key.revoked"')
  })

  test('removed from the business shown, the session ends; removed from another, it goes on without it', async () => {
    const { service, session, membership, acme, bravo } = await adaInTwo()
    const members = createMemberService(await db())
    await members.remove(membership(bravo), TEST_AUTHOR)
    const page = await getPage(service, KEYS, session)
    expect(page.status).toBe(200)
    expect(await page.text()).not.toContain('class="switcher"')
    // The account stays while it has a membership; removed from the last one, it is deleted.
    expect(await (await db()).select().from(accounts)).toHaveLength(1)
    await members.remove(membership(acme), TEST_AUTHOR)
    const after = await getPage(service, KEYS, session)
    expect(after.status).toBe(303)
    expect(after.headers.get('location')).toStartWith('/dashboard/sign-in')
    expect(await (await db()).select().from(accounts)).toHaveLength(0)
    expect(await (await db()).select().from(memberSessions)).toHaveLength(0)
  })

  test("a new password through a sign-in link ends the sessions of every business, and opens the link's business", async () => {
    const { service, session, membership, bravo } = await adaInTwo()
    await switchTo(service, session, membership(bravo))
    const members = createMemberService(await db())
    const link = await members.issueSignInLink(membership(bravo), 'operator')
    const chosen = await postForm(service, '/dashboard/sign-in/link', {
      token: link.token,
      password: `${PASSWORD} 2`,
      confirm: `${PASSWORD} 2`,
    })
    expect(chosen.status).toBe(303)
    expect((await getPage(service, KEYS, session)).status).toBe(303)
    const cookie = chosen.headers
      .getSetCookie()
      .find((c) => c.startsWith('keygate_session='))!
      .split(';')[0]!
    expect(await (await getPage(service, KEYS, { cookie })).text()).toContain('<span class="business">Bravo</span>')
    // One password for the account: it signs in, whichever business the link named.
    expect((await signIn(service, 'ada@example.com', `${PASSWORD} 2`)).cookie).toStartWith('keygate_session=')
  })
})
