import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, auditEntries, memberSessions, signInFailures } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { seedKey, testService } from '../support/service.ts'
import { addMember, getPage, KEYS, memberOf, memberRows, PASSWORD, postForm, signIn } from './support.ts'

// Issue 10 item 8: owners add and remove members; who may do what (docs/dashboard.md).
const MEMBERS = '/dashboard/settings/members'
const db = async () => (await testDatabase()).db

describe('members in the dashboard', () => {
  test('an owner adds a member, who gets a one-time sign-in link shown once; the trail records it', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const list = await (await getPage(service, MEMBERS, session)).text()
    expect(list).toContain('ada@example.com <span class="muted small">(you)</span>')
    expect(list).toContain('Add member')

    const added = await postForm(
      service,
      MEMBERS,
      { csrf: session.csrf, email: ' Bo@Example.com ', role: 'member' },
      { cookie: session.cookie },
    )
    expect(added.status).toBe(201)
    const page = await added.text()
    const url = /id="link-value" type="text" readonly value="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&')
    expect(url).toStartWith('http://localhost/dashboard/sign-in/link?token=')
    const [bo] = (await memberRows()).filter((m) => m.email === 'bo@example.com')
    expect(bo).toMatchObject({ businessId, role: 'member', passwordHash: null })
    // The link works: on it Bo chooses a password.
    const link = await getPage(service, url.slice('http://localhost'.length))
    expect(link.status).toBe(200)
    expect(await link.text()).toContain('bo@example.com')
    // Shown once: the list does not carry it again.
    expect(await (await getPage(service, MEMBERS, session)).text()).not.toContain('sign-in/link?token=')
    const trail = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'member.created'))
    expect(trail).toContainEqual(
      expect.objectContaining({
        actor: 'member:ada@example.com',
        memberId: bo!.id,
        changes: { email: { from: null, to: 'bo@example.com' }, role: { from: null, to: 'member' } },
      }),
    )
  })

  test('a bad email, or one already a member here, re-renders the form with the reason, and adds no one', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    await addMember((await memberRows())[0]!.businessId, { email: 'bo@example.com', role: 'member' })
    const before = await memberRows()
    const bad = await postForm(service, MEMBERS, { csrf: session.csrf, email: 'not-an-email', role: 'member' }, { cookie: session.cookie })
    expect(bad.status).toBe(400)
    expect(await bad.text()).toContain('is not an email address')
    const taken = await postForm(
      service,
      MEMBERS,
      { csrf: session.csrf, email: 'Bo@example.com', role: 'owner' },
      { cookie: session.cookie },
    )
    expect(taken.status).toBe(409)
    expect(await taken.text()).toContain('bo@example.com is already a member of Acme.')
    expect(await memberRows()).toEqual(before)
  })

  test('adding a member of another business makes a pending membership: it shows once they type their own password on its link', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { businessId: rivalId } = await memberOf(service, 'Rival', 'rex@rival.example')
    const added = await postForm(
      service,
      MEMBERS,
      { csrf: session.csrf, email: 'rex@rival.example', role: 'member' },
      { cookie: session.cookie },
    )
    expect(added.status).toBe(201)
    const page = await added.text()
    expect(page).toContain('rex@rival.example already has a keygate account: on the link they type its password to join Acme.')
    const url = /id="link-value" type="text" readonly value="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&')
    const token = new URL(url).searchParams.get('token')!
    const rex = (await memberRows()).filter((m) => m.email === 'rex@rival.example')
    expect(rex.map((m) => [m.businessId, m.role])).toEqual([
      [rivalId, 'owner'],
      [businessId, 'member'],
    ])
    // Pending: Rex signs in as before (to Rival), and Acme is nowhere, not even by its id.
    const rexSession = await signIn(service, 'rex@rival.example')
    expect(await (await getPage(service, KEYS, rexSession)).text()).not.toContain(rex[1]!.id)
    const switched = await postForm(
      service,
      '/dashboard/switch',
      { csrf: rexSession.csrf, member: rex[1]!.id, next: KEYS },
      { cookie: rexSession.cookie },
    )
    expect(switched.status).toBe(404)
    // The link asks for his password, not a new one; a wrong one joins nothing.
    const join = await (await getPage(service, `/dashboard/sign-in/link?token=${token}`)).text()
    expect(join).toContain('Join Acme')
    expect(join).not.toContain('New password')
    const wrong = await postForm(service, '/dashboard/sign-in/link', {
      token,
      password: 'not his password at all',
      confirm: 'not his password at all',
    })
    expect(wrong.status).toBe(401)
    expect((await signIn(service, 'rex@rival.example')).cookie).toStartWith('keygate_session=')
    const joined = await postForm(service, '/dashboard/sign-in/link', { token, password: PASSWORD })
    expect(joined.status).toBe(303)
    // Joined: his existing session now lists Acme, and switches to it.
    expect(await (await getPage(service, KEYS, rexSession)).text()).toContain(`name="member" value="${rex[1]!.id}"`)
    const now = await postForm(
      service,
      '/dashboard/switch',
      { csrf: rexSession.csrf, member: rex[1]!.id, next: KEYS },
      { cookie: rexSession.cookie },
    )
    expect(now.status).toBe(303)
    expect(await (await getPage(service, KEYS, rexSession)).text()).toContain('<span class="business">Acme</span>')
  })

  test('an owner removes a member: their session ends at once, and the trail records it', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const bo = await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const boSession = await signIn(service, 'bo@example.com')
    expect((await getPage(service, KEYS, boSession)).status).toBe(200)

    const removed = await postForm(service, `${MEMBERS}/${bo.id}/remove`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(removed.status).toBe(303)
    expect(removed.headers.get('location')).toBe(`${MEMBERS}?removed=1`)
    expect((await memberRows()).map((m) => m.email)).toEqual(['ada@example.com'])
    expect(await (await db()).select().from(memberSessions).where(eq(memberSessions.memberId, bo.id))).toHaveLength(0)
    const after = await getPage(service, KEYS, boSession)
    expect(after.status).toBe(303)
    expect(after.headers.get('location')).toStartWith('/dashboard/sign-in')
    const trail = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'member.removed'))
    expect(trail).toEqual([
      expect.objectContaining({
        actor: 'member:ada@example.com',
        memberId: bo.id,
        changes: { email: { from: 'bo@example.com', to: null }, role: { from: 'member', to: null } },
      }),
    ])
  })

  test("an owner cannot remove themselves, nor another business's member", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const me = (await memberRows()).find((m) => m.email === 'ada@example.com')!
    expect((await postForm(service, `${MEMBERS}/${me.id}/remove`, { csrf: session.csrf }, { cookie: session.cookie })).status).toBe(409)
    const { businessId: rivalId } = await memberOf(service, 'Rival', 'rex@rival.example')
    const rex = (await memberRows()).find((m) => m.businessId === rivalId)!
    expect((await postForm(service, `${MEMBERS}/${rex.id}/remove`, { csrf: session.csrf }, { cookie: session.cookie })).status).toBe(404)
    expect((await postForm(service, `${MEMBERS}/not-a-uuid/remove`, { csrf: session.csrf }, { cookie: session.cookie })).status).toBe(404)
    expect((await memberRows()).length).toBe(2)
    expect(businessId).not.toBe(rivalId)
    expect(await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'member.removed'))).toHaveLength(0)
  })
})

describe('who may do what', () => {
  test('a member (not an owner) sees the members but cannot add or remove them, nor set the identity secret', async () => {
    const service = await testService()
    const { businessId } = await memberOf(service)
    const ada = (await memberRows())[0]!
    await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const bo = await signIn(service, 'bo@example.com')
    const page = await (await getPage(service, MEMBERS, bo)).text()
    expect(page).toContain('ada@example.com')
    expect(page).toContain('Only owners add and remove members.')
    expect(page).not.toContain('Confirm: remove')
    const before = (await memberRows()).length
    expect(
      (await postForm(service, MEMBERS, { csrf: bo.csrf, email: 'cy@example.com', role: 'owner' }, { cookie: bo.cookie })).status,
    ).toBe(403)
    expect((await postForm(service, `${MEMBERS}/${ada.id}/remove`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(403)
    expect((await postForm(service, '/dashboard/settings/business/identity-secret', { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(
      403,
    )
    expect((await memberRows()).length).toBe(before)
  })

  test('a member (not an owner) creates, rolls and revokes keys, recorded under their email', async () => {
    const service = await testService()
    const { businessId } = await memberOf(service)
    await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const bo = await signIn(service, 'bo@example.com')
    const created = await postForm(
      service,
      `${KEYS}/new`,
      { csrf: bo.csrf, name: 'Shop', origins: 'example.com', scopes: ['ANALYTICS_WRITE'] },
      { cookie: bo.cookie },
    )
    expect(created.status).toBe(303)
    const [key] = await (await db()).select().from(apiKeys)
    const rolled = await postForm(service, `${KEYS}/${key!.id}/roll`, { csrf: bo.csrf, graceSeconds: '0' }, { cookie: bo.cookie })
    expect(rolled.status).toBe(303)
    const other = await seedKey(service, businessId)
    expect((await postForm(service, `${KEYS}/${other.record.id}/revoke`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(303)
    const actions = (await (await db()).select().from(auditEntries).where(eq(auditEntries.actor, 'member:bo@example.com')))
      .map((e) => e.action)
      .sort()
    expect(actions).toEqual(['key.created', 'key.created', 'key.revoked', 'key.rolled'])
  })
})

describe('a form whose text is not UTF-8', () => {
  // Raw bytes a browser never sends for a form: 0xFF, and a truncated two-byte sequence.
  const email = (tail: number[]) =>
    new Uint8Array([...new TextEncoder().encode('email=bo'), ...tail, ...new TextEncoder().encode('%40example.com')])

  test('is refused with a 400 page and stores nothing: raw bytes, and escapes that do not decode', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const before = await memberRows()
    const bodies: Uint8Array<ArrayBuffer>[] = [
      email([0xff]),
      email([0xc3]),
      new TextEncoder().encode(`csrf=${session.csrf}&email=bo%FF%40example.com&role=member`),
      new TextEncoder().encode(`csrf=${session.csrf}&email=bo%C3%28%40example.com&role=member`),
    ]
    for (const [i, body] of bodies.entries()) {
      const sent = i < 2 ? new Uint8Array([...new TextEncoder().encode(`csrf=${session.csrf}&role=member&`), ...body]) : body
      const response = await service.app.handle(
        new Request(`http://localhost${MEMBERS}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie, origin: 'http://localhost' },
          body: sent,
        }),
      )
      expect(response.status).toBe(400)
      expect(response.headers.get('content-type')).toContain('text/html')
      expect(await response.text()).toContain('not UTF-8')
    }
    expect(await memberRows()).toEqual(before)
    expect((await memberRows()).some((member) => member.email.includes('\uFFFD') || member.email.includes('%'))).toBe(false)
  })

  test('a sign-in form with such an email is a 400 page too, and counts no attempt', async () => {
    const service = await testService()
    await memberOf(service)
    const response = await service.app.handle(
      new Request('http://localhost/dashboard/sign-in', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost' },
        body: new Uint8Array([...new TextEncoder().encode('email=ada'), 0xff, ...new TextEncoder().encode('&password=x')]),
      }),
    )
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('not UTF-8')
    expect(await (await db()).select().from(signInFailures)).toEqual([])
  })
})
