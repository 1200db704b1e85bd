import { describe, expect, test } from 'bun:test'
import { and, eq, isNull } from 'drizzle-orm'
import { accounts, auditEntries, businesses, members, memberSessions, memberSignInLinks } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase } from '../support/database.ts'
import { admin, seedBusiness, testService } from '../support/service.ts'
import { addMember, cookieFrom, getPage, KEYS, memberOf, PASSWORD, postForm, type Session, signIn, trySignIn } from './support.ts'

// An account is its person's alone (docs/dashboard.md, "Members and sign-in links"): the two
// takeovers shown on the version before, through the dashboard's forms and the admin API,
// and every way a link or a membership is made.
const MEMBERS = '/dashboard/settings/members'
const LINK = '/dashboard/sign-in/link'
const SECRET = '/dashboard/settings/business/identity-secret'
const CARL = 'carl knows this password'
const VICTIM = 'the person chose this one'
const db = async () => (await testDatabase()).db

/** The token of the link a members page shows once. */
function tokenIn(page: string): string {
  const url = /id="link-value" type="text" readonly value="([^"]+)"/.exec(page)?.[1]
  if (!url) throw new Error('the page shows no sign-in link')
  return new URL(url.replaceAll('&amp;', '&')).searchParams.get('token')!
}

/** An owner adds `email` in Settings, Members; answers the token of the link shown. */
async function addInDashboard(service: Service, owner: Session, email: string, role = 'member'): Promise<string> {
  const added = await postForm(service, MEMBERS, { csrf: owner.csrf, email, role }, { cookie: owner.cookie })
  expect(added.status).toBe(201)
  return tokenIn(await added.text())
}

function choose(service: Service, token: string, password: string) {
  return postForm(service, LINK, { token, password, confirm: password })
}

async function secretOf(businessId: string) {
  const [row] = await (await db()).select({ secret: businesses.identitySecret }).from(businesses).where(eq(businesses.id, businessId))
  return row!.secret
}

async function membership(businessId: string, email: string) {
  const [row] = await (await db())
    .select({ id: members.id, acceptedAt: members.acceptedAt, passwordHash: accounts.passwordHash })
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .where(and(eq(members.businessId, businessId), eq(accounts.email, email)))
  return row!
}

async function outstandingLinks(memberId: string) {
  return (await db())
    .select()
    .from(memberSignInLinks)
    .where(and(eq(memberSignInLinks.memberId, memberId), isNull(memberSignInLinks.usedAt)))
}

function switchTo(service: Service, session: Session, memberId: string) {
  return postForm(service, '/dashboard/switch', { csrf: session.csrf, member: memberId, next: KEYS }, { cookie: session.cookie })
}

describe('no owner reaches a business through an email they added elsewhere', () => {
  test('(A) the owner who set the password of an email they added cannot enter the business that added it later', async () => {
    const service = await testService()
    const cee = await memberOf(service, 'Cee', 'carl@cee.example')
    const bee = await memberOf(service, 'Bee', 'bea@bee.example')
    expect((await postForm(service, SECRET, { csrf: bee.session.csrf }, { cookie: bee.session.cookie })).status).toBe(201)
    const beeSecret = await secretOf(bee.businessId)

    // Carl adds victim1 to Cee, opens the link shown to him and sets the password: the account has none, so it may.
    const cLink = await addInDashboard(service, cee.session, 'victim1@example.com', 'owner')
    expect(await (await getPage(service, `${LINK}?token=${cLink}`)).text()).toContain('Choose a password')
    expect((await choose(service, cLink, CARL)).status).toBe(303)

    // Bea adds the same email to Bee as owner: a pending membership, its link asking for the account's password.
    const added = await postForm(
      service,
      MEMBERS,
      { csrf: bee.session.csrf, email: 'victim1@example.com', role: 'owner' },
      { cookie: bee.session.cookie },
    )
    expect(added.status).toBe(201)
    const addedPage = await added.text()
    expect(addedPage).toContain('victim1@example.com already has a keygate account: on the link they type its password to join Bee.')
    const bLink = tokenIn(addedPage)
    const inBee = await membership(bee.businessId, 'victim1@example.com')
    expect(inBee.acceptedAt).toBeNull()

    // Carl signs in as victim1: Cee only. Bee is not listed, cannot be switched to, and its pages are not his.
    const carl = await signIn(service, 'victim1@example.com', CARL)
    const keys = await (await getPage(service, KEYS, carl)).text()
    expect(keys).toContain('<span class="business">Cee</span>')
    expect(keys).not.toContain('Bee')
    expect(keys).not.toContain(inBee.id)
    expect((await switchTo(service, carl, inBee.id)).status).toBe(404)
    const beaInBee = await membership(bee.businessId, 'bea@bee.example')
    expect((await postForm(service, `${MEMBERS}/${beaInBee.id}/remove`, { csrf: carl.csrf }, { cookie: carl.cookie })).status).toBe(404)
    // A form naming Bee changes nothing; the rotation he may do is Cee's.
    expect((await postForm(service, SECRET, { csrf: carl.csrf, business: bee.businessId }, { cookie: carl.cookie })).status).toBe(409)
    expect((await postForm(service, SECRET, { csrf: carl.csrf }, { cookie: carl.cookie })).status).toBe(201)
    expect(await secretOf(bee.businessId)).toBe(beeSecret)
    expect(await secretOf(cee.businessId)).not.toBeNull()

    // Bea, who holds Bee's link, cannot set the account's password with it: it asks for the one it has.
    expect(await (await getPage(service, `${LINK}?token=${bLink}`)).text()).toContain('Your password')
    expect((await choose(service, bLink, 'bea sets a password of her own')).status).toBe(401)
    expect(await Bun.password.verify(CARL, (await membership(cee.businessId, 'victim1@example.com')).passwordHash!)).toBe(true)
    expect((await membership(bee.businessId, 'victim1@example.com')).acceptedAt).toBeNull()
    // The account stays its holder's: the password still signs in, Bea's does not.
    expect((await trySignIn(service, 'victim1@example.com', CARL)).status).toBe(303)
    expect((await trySignIn(service, 'victim1@example.com', 'bea sets a password of her own')).status).toBe(401)
  })

  test("(B) an owner's unused link dies when the person uses the operator's; the person keeps the account and the session", async () => {
    const service = await testService()
    const cee = await memberOf(service, 'Cee', 'carl@cee.example')
    const bee = await seedBusiness(service, 'Bee')
    const cLink = await addInDashboard(service, cee.session, 'victim2@example.com')

    // The operator adds the email to Bee and issues a link (admin API); the person sets their password with it.
    const created = await admin(service, `/businesses/${bee}/members`, { body: { email: 'victim2@example.com', role: 'owner' } })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }
    const issued = await admin(service, `/members/${id}/sign-in-link`, { method: 'POST' })
    expect(issued.status).toBe(201)
    const { signInLink } = (await issued.json()) as { signInLink: { url: string } }
    const chosen = await choose(service, new URL(signInLink.url).searchParams.get('token')!, VICTIM)
    expect(chosen.status).toBe(303)
    const person = { cookie: cookieFrom(chosen, 'keygate_session')! }

    // Carl's old link is dead, for reading and for writing.
    expect((await getPage(service, `${LINK}?token=${cLink}`)).status).toBe(410)
    expect((await choose(service, cLink, CARL)).status).toBe(410)
    expect(await outstandingLinks((await membership(cee.businessId, 'victim2@example.com')).id)).toHaveLength(0)

    // The person keeps the account: their password signs in, their session goes on, Carl's password is nothing.
    expect(await Bun.password.verify(VICTIM, (await membership(bee, 'victim2@example.com')).passwordHash!)).toBe(true)
    const page = await getPage(service, KEYS, person)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<span class="business">Bee</span>')
    expect((await trySignIn(service, 'victim2@example.com', VICTIM)).status).toBe(303)
    expect((await trySignIn(service, 'victim2@example.com', CARL)).status).toBe(401)
  })

  test("(B) used first, the owner's link opens only his business; the operator's link then takes the account back for its person", async () => {
    const service = await testService()
    const cee = await memberOf(service, 'Cee', 'carl@cee.example')
    const bee = await seedBusiness(service, 'Bee')
    const cLink = await addInDashboard(service, cee.session, 'victim2@example.com')
    const created = await admin(service, `/businesses/${bee}/members`, { body: { email: 'victim2@example.com', role: 'owner' } })
    const { signInLink } = (await created.json()) as { signInLink: { url: string } }

    // Carl is quicker: the account had no password, his link sets one, and opens Cee alone.
    const carlChose = await choose(service, cLink, CARL)
    expect(carlChose.status).toBe(303)
    const carl = await signIn(service, 'victim2@example.com', CARL)
    expect(await (await getPage(service, KEYS, carl)).text()).not.toContain('Bee')
    expect((await switchTo(service, carl, (await membership(bee, 'victim2@example.com')).id)).status).toBe(404)
    // Carl's use killed the operator's link too; the operator sends another, a recovery: it resets the password.
    expect((await getPage(service, new URL(signInLink.url).pathname + new URL(signInLink.url).search)).status).toBe(410)
    const again = await admin(service, `/members/${(await membership(bee, 'victim2@example.com')).id}/sign-in-link`, {
      method: 'POST',
    })
    const token = new URL(((await again.json()) as { signInLink: { url: string } }).signInLink.url).searchParams.get('token')!
    expect((await choose(service, token, VICTIM)).status).toBe(303)
    // Every session of the account ended, Carl's included; his password is gone.
    expect((await getPage(service, KEYS, carl)).status).toBe(303)
    expect((await getPage(service, KEYS, { cookie: cookieFrom(carlChose, 'keygate_session')! })).status).toBe(303)
    expect((await trySignIn(service, 'victim2@example.com', CARL)).status).toBe(401)
    expect((await trySignIn(service, 'victim2@example.com', VICTIM)).status).toBe(303)
  })
})

describe('every way a link or a membership is made', () => {
  test('dashboard, a new email: the link sets the password and joins', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const token = await addInDashboard(service, session, 'new@example.com')
    expect((await membership(businessId, 'new@example.com')).acceptedAt).toBeNull()
    expect(await (await getPage(service, `${LINK}?token=${token}`)).text()).toContain('New password')
    expect((await choose(service, token, VICTIM)).status).toBe(303)
    expect((await membership(businessId, 'new@example.com')).acceptedAt).not.toBeNull()
  })

  test('dashboard, an email with a password: pending; the link asks for that password and never sets one', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const other = await seedBusiness(service, 'Other')
    await addMember(other, { email: 'rex@example.com' })
    const token = await addInDashboard(service, session, 'rex@example.com')
    const before = await membership(businessId, 'rex@example.com')
    expect(before.acceptedAt).toBeNull()
    expect((await choose(service, token, 'a password of the owner')).status).toBe(401)
    expect((await membership(businessId, 'rex@example.com')).passwordHash).toBe(before.passwordHash)
    expect(await joinedEntries(businessId)).toEqual([])
    // Another business's link for him is outstanding too; joining with this one kills it.
    const third = await admin(service, `/businesses/${await seedBusiness(service, 'Third')}/members`, {
      body: { email: 'rex@example.com', role: 'member' },
    })
    const thirdLink = new URL(((await third.json()) as { signInLink: { url: string } }).signInLink.url).searchParams.get('token')!
    expect((await postForm(service, LINK, { token, password: PASSWORD })).status).toBe(303)
    expect((await membership(businessId, 'rex@example.com')).acceptedAt).not.toBeNull()
    // The trail of the business he joined, and no other, says so, in his name.
    expect(await joinedEntries(businessId)).toEqual([
      { actor: 'member:rex@example.com', memberId: before.id, changes: { pending: { from: true, to: false } } },
    ])
    expect(await joinedEntries(other)).toEqual([])
    expect((await choose(service, thirdLink, CARL)).status).toBe(410)
    expect((await trySignIn(service, 'rex@example.com', PASSWORD)).status).toBe(303)
  })

  test("a link that asks for the account's password is under the sign-in throttle: no way to guess it", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    await addMember(await seedBusiness(service, 'Other'), { email: 'rex@example.com' })
    const token = await addInDashboard(service, session, 'rex@example.com')
    for (let guess = 1; guess <= 5; guess++) {
      expect((await postForm(service, LINK, { token, password: `guess number ${guess}` })).status).toBe(401)
    }
    const blocked = await postForm(service, LINK, { token, password: PASSWORD })
    expect(blocked.status).toBe(429)
    expect(blocked.headers.get('retry-after')).toMatch(/^\d+$/)
    expect((await membership(businessId, 'rex@example.com')).acceptedAt).toBeNull()
  })

  test('dashboard, an email invited elsewhere without a password: the link sets it and joins this business only', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const other = await memberOf(service, 'Other', 'olga@example.com')
    const elsewhere = await addInDashboard(service, other.session, 'new@example.com')
    const token = await addInDashboard(service, session, 'new@example.com')
    expect((await choose(service, token, VICTIM)).status).toBe(303)
    expect((await membership(businessId, 'new@example.com')).acceptedAt).not.toBeNull()
    expect((await membership(other.businessId, 'new@example.com')).acceptedAt).toBeNull()
    expect((await choose(service, elsewhere, CARL)).status).toBe(410)
  })

  test('dashboard, "New link": only for a pending member, and it too asks for an existing password', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const other = await seedBusiness(service, 'Other')
    await addMember(other, { email: 'rex@example.com' })
    await addInDashboard(service, session, 'rex@example.com')
    const rex = await membership(businessId, 'rex@example.com')
    const list = await (await getPage(service, MEMBERS, session)).text()
    expect(list).toContain(`action="${MEMBERS}/${rex.id}/link"`)
    const again = await postForm(service, `${MEMBERS}/${rex.id}/link`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(again.status).toBe(201)
    const token = tokenIn(await again.text())
    expect(await (await getPage(service, `${LINK}?token=${token}`)).text()).toContain('Your password')
    expect((await choose(service, token, 'a password of the owner')).status).toBe(401)
    // Joined, or an owner of the business: no link to make (it could only ask for the password they sign in with).
    const ada = await membership(businessId, 'ada@example.com')
    const linksBefore = await outstandingLinks(ada.id)
    const refused = await postForm(service, `${MEMBERS}/${ada.id}/link`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(refused.status).toBe(409)
    expect(await outstandingLinks(ada.id)).toEqual(linksBefore)
    // Another business's member is not found.
    const otherMember = await membership(other, 'rex@example.com')
    expect((await postForm(service, `${MEMBERS}/${otherMember.id}/link`, { csrf: session.csrf }, { cookie: session.cookie })).status).toBe(
      404,
    )
  })

  test('admin API, with a password: joined at once, no link; without: pending, and its link sets a password', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const withPassword = await admin(service, `/businesses/${businessId}/members`, {
      body: { email: 'ada@example.com', password: PASSWORD, role: 'owner' },
    })
    const joined = (await withPassword.json()) as Record<string, unknown>
    expect(joined).toMatchObject({ pending: false, passwordSet: true })
    expect(joined.signInLink).toBeUndefined()
    const invited = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'bo@example.com', role: 'member' } })
    const body = (await invited.json()) as { pending: boolean; signInLink: { url: string } }
    expect(body.pending).toBe(true)
    expect((await choose(service, new URL(body.signInLink.url).searchParams.get('token')!, VICTIM)).status).toBe(303)
    expect((await membership(businessId, 'bo@example.com')).acceptedAt).not.toBeNull()
  })

  test("admin API, an operator's link to a joined member: a recovery that ends every session and link of the account", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const other = await memberOf(service, 'Other', 'olga@example.com')
    const pendingElsewhere = await addInDashboard(service, other.session, 'ada@example.com')
    const ada = await membership(businessId, 'ada@example.com')
    const issued = await admin(service, `/members/${ada.id}/sign-in-link`, { method: 'POST' })
    const token = new URL(((await issued.json()) as { signInLink: { url: string } }).signInLink.url).searchParams.get('token')!
    expect(await (await getPage(service, `${LINK}?token=${token}`)).text()).toContain('New password')
    expect((await choose(service, token, VICTIM)).status).toBe(303)
    expect((await getPage(service, KEYS, session)).status).toBe(303)
    expect(await (await db()).select().from(memberSessions).where(eq(memberSessions.memberId, ada.id))).toHaveLength(1)
    expect((await postForm(service, LINK, { token: pendingElsewhere, password: VICTIM })).status).toBe(410)
    expect((await trySignIn(service, 'ada@example.com', PASSWORD)).status).toBe(401)
    expect((await trySignIn(service, 'ada@example.com', VICTIM)).status).toBe(303)
  })

  test('a link is used once', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const token = await addInDashboard(service, session, 'new@example.com')
    expect((await choose(service, token, VICTIM)).status).toBe(303)
    expect((await choose(service, token, CARL)).status).toBe(410)
    expect((await trySignIn(service, 'new@example.com', VICTIM)).status).toBe(303)
  })
})

/** The business's `member.joined` entries in the audit trail. */
async function joinedEntries(businessId: string) {
  return (await db())
    .select({ actor: auditEntries.actor, memberId: auditEntries.memberId, changes: auditEntries.changes })
    .from(auditEntries)
    .where(and(eq(auditEntries.businessId, businessId), eq(auditEntries.action, 'member.joined')))
}
