import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { memberSessions, memberSignInLinks, members } from '../../db/schema/index.ts'
import { bootstrapFirstOwner } from '../../src/dashboard/bootstrap.ts'
import { createMemberService } from '../../src/members/service.ts'
import { SESSION_IDLE_MS } from '../../src/dashboard/sessions.ts'
import { hashToken } from '../../src/access/secrets.ts'
import { testDatabase } from '../support/database.ts'
import { TEST_AUTHOR, call, seedBusiness, testService } from '../support/service.ts'
import {
  addMember,
  cookieFrom,
  memberRows,
  getPage,
  hiddenValue,
  KEYS,
  PASSWORD,
  postForm,
  setCookieHeader,
  signIn,
  trySignIn,
} from './support.ts'

const db = async () => (await testDatabase()).db

describe('dashboard sign-in', () => {
  test('a page asked for without a session redirects to sign-in and remembers where to return', async () => {
    const service = await testService()
    const response = await call(service, `${KEYS}/new`)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`/dashboard/sign-in?next=${encodeURIComponent(`${KEYS}/new`)}`)
  })

  test('/dashboard leads to Settings > Developers > API keys', async () => {
    const service = await testService()
    const response = await call(service, '/dashboard')
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(KEYS)
  })

  test('the right password starts a session in an HttpOnly, SameSite=Lax cookie whose token is stored only hashed', async () => {
    const service = await testService()
    const member = await addMember(await seedBusiness(service))
    const response = await trySignIn(service, 'Ada@Example.com ', PASSWORD)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(KEYS)
    const header = setCookieHeader(response, 'keygate_session')!
    expect(header).toContain('HttpOnly')
    expect(header).toContain('SameSite=Lax')
    expect(header).toContain('Path=/dashboard')
    expect(header).not.toContain('Secure')
    const token = cookieFrom(response, 'keygate_session')!.split('=')[1]!
    const rows = await (await db()).select().from(memberSessions).where(eq(memberSessions.memberId, member.id))
    expect(rows).toHaveLength(1)
    expect(rows[0]!.tokenHash).toBe(hashToken(token))
    expect(JSON.stringify(rows)).not.toContain(token)
  })

  test('the session cookie is Secure when the request came over https through a proxy', async () => {
    const service = await testService()
    await addMember(await seedBusiness(service))
    const response = await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-proto': 'https' })
    expect(response.status).toBe(303)
    expect(setCookieHeader(response, 'keygate_session')).toContain('; Secure')
  })

  test('a wrong password answers 401 with the form again and starts no session', async () => {
    const service = await testService()
    const member = await addMember(await seedBusiness(service))
    const response = await trySignIn(service, 'ada@example.com', 'not the password at all')
    expect(response.status).toBe(401)
    expect(await response.text()).toContain('That email and password do not match a member')
    expect(cookieFrom(response, 'keygate_session')).toBeNull()
    expect(await (await db()).select().from(memberSessions).where(eq(memberSessions.memberId, member.id))).toHaveLength(0)
  })

  test('an unknown email answers exactly like a wrong password', async () => {
    const service = await testService()
    await addMember(await seedBusiness(service))
    const response = await trySignIn(service, 'nobody@example.com', PASSWORD)
    expect(response.status).toBe(401)
    expect(await response.text()).toContain('That email and password do not match a member')
  })

  test('after sign-in the member returns to the dashboard page they asked for', async () => {
    const service = await testService()
    await addMember(await seedBusiness(service))
    const page = await call(service, `/dashboard/sign-in?next=${encodeURIComponent(`${KEYS}/new`)}`)
    const text = await page.text()
    const response = await postForm(
      service,
      '/dashboard/sign-in',
      { csrf: hiddenValue(text, 'csrf'), next: hiddenValue(text, 'next'), email: 'ada@example.com', password: PASSWORD },
      { cookie: cookieFrom(page, 'keygate_sign_in')! },
    )
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${KEYS}/new`)
  })

  test('a "next" outside the dashboard is ignored, so sign-in is no open redirect', async () => {
    const service = await testService()
    await addMember(await seedBusiness(service))
    const page = await call(service, '/dashboard/sign-in')
    const response = await postForm(
      service,
      '/dashboard/sign-in',
      { csrf: hiddenValue(await page.text(), 'csrf'), email: 'ada@example.com', password: PASSWORD, next: '//evil.example/dashboard/x' },
      { cookie: cookieFrom(page, 'keygate_sign_in')! },
    )
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(KEYS)
  })

  test('signing out ends the session in the database and clears the cookie', async () => {
    const service = await testService()
    const member = await addMember(await seedBusiness(service))
    const session = await signIn(service)
    const response = await postForm(service, '/dashboard/sign-out', { csrf: session.csrf }, { cookie: session.cookie })
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe('/dashboard/sign-in')
    expect(setCookieHeader(response, 'keygate_session')).toContain('Max-Age=0')
    expect(await (await db()).select().from(memberSessions).where(eq(memberSessions.memberId, member.id))).toHaveLength(0)
    const again = await getPage(service, KEYS, session)
    expect(again.status).toBe(303)
    expect(again.headers.get('location')).toStartWith('/dashboard/sign-in')
  })

  test('an expired session is refused', async () => {
    const service = await testService()
    const member = await addMember(await seedBusiness(service))
    const session = await signIn(service)
    await (await db())
      .update(memberSessions)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(memberSessions.memberId, member.id))
    const response = await getPage(service, KEYS, session)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toStartWith('/dashboard/sign-in')
  })

  test('using a session slides its expiry forward', async () => {
    const service = await testService()
    const member = await addMember(await seedBusiness(service))
    const session = await signIn(service)
    const soon = new Date(Date.now() + 60_000)
    await (await db()).update(memberSessions).set({ expiresAt: soon }).where(eq(memberSessions.memberId, member.id))
    expect((await getPage(service, KEYS, session)).status).toBe(200)
    const [row] = await (await db()).select().from(memberSessions).where(eq(memberSessions.memberId, member.id))
    expect(row!.expiresAt.getTime()).toBeGreaterThan(Date.now() + SESSION_IDLE_MS - 60_000)
  })
})

describe('one-time sign-in links', () => {
  async function memberWithLink() {
    const service = await testService()
    const businessId = await seedBusiness(service, 'Linked Ltd')
    const created = await createMemberService(await db()).create(
      businessId,
      { email: 'new@example.com', role: 'member' },
      TEST_AUTHOR,
      'member',
    )
    return { service, member: created.member, token: created.signInLink!.token }
  }

  test('the link asks for a password, then signs in', async () => {
    const { service, member, token } = await memberWithLink()
    const page = await call(service, `/dashboard/sign-in/link?token=${token}`)
    expect(page.status).toBe(200)
    const text = await page.text()
    expect(text).toContain('new@example.com')
    expect(text).toContain('Linked Ltd')
    expect(page.headers.get('referrer-policy')).toBe('same-origin')
    const response = await postForm(service, '/dashboard/sign-in/link', { token, password: PASSWORD, confirm: PASSWORD })
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(KEYS)
    expect(cookieFrom(response, 'keygate_session')).not.toBeNull()
    const [row] = (await memberRows()).filter((m) => m.id === member.id)
    expect(await Bun.password.verify(PASSWORD, row!.passwordHash!)).toBe(true)
    expect((await signIn(service, 'new@example.com')).cookie).toStartWith('keygate_session=')
  })

  test('a link works once', async () => {
    const { service, token } = await memberWithLink()
    await postForm(service, '/dashboard/sign-in/link', { token, password: PASSWORD, confirm: PASSWORD })
    const again = await postForm(service, '/dashboard/sign-in/link', {
      token,
      password: 'another long password',
      confirm: 'another long password',
    })
    expect(again.status).toBe(410)
    expect((await call(service, `/dashboard/sign-in/link?token=${token}`)).status).toBe(410)
  })

  test('an expired link is refused', async () => {
    const { service, member, token } = await memberWithLink()
    await (await db())
      .update(memberSignInLinks)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(memberSignInLinks.memberId, member.id))
    expect((await call(service, `/dashboard/sign-in/link?token=${token}`)).status).toBe(410)
  })

  test('a short or mismatched password is refused on the page and the link stays usable', async () => {
    const { service, token } = await memberWithLink()
    const short = await postForm(service, '/dashboard/sign-in/link', { token, password: 'short', confirm: 'short' })
    expect(short.status).toBe(400)
    expect(await short.text()).toContain('use at least 12')
    const differ = await postForm(service, '/dashboard/sign-in/link', { token, password: PASSWORD, confirm: `${PASSWORD}!` })
    expect(differ.status).toBe(400)
    expect(await differ.text()).toContain('The two passwords differ')
    expect((await call(service, `/dashboard/sign-in/link?token=${token}`)).status).toBe(200)
  })
})

describe('first start', () => {
  test('an empty database gets a business, an owner and one printed sign-in link', async () => {
    const lines: string[] = []
    const url = (await bootstrapFirstOwner(await db(), { baseUrl: 'http://localhost:3000', log: (l) => lines.push(l) }))?.url
    expect(lines).toHaveLength(1)
    expect(lines[0]).toStartWith('keygate first start: created business "My business" and its owner owner@example.com.')
    expect(lines[0]).toContain(url!)
    expect(url).toStartWith('http://localhost:3000/dashboard/sign-in/link?token=')
    const [owner] = await memberRows()
    expect(owner).toMatchObject({ email: 'owner@example.com', role: 'owner', passwordHash: null })
    const service = await testService()
    const page = await call(service, new URL(url!).pathname + new URL(url!).search)
    expect(page.status).toBe(200)
  })

  test('a database with a business is left alone and nothing is printed', async () => {
    const service = await testService()
    await seedBusiness(service)
    const lines: string[] = []
    expect(await bootstrapFirstOwner(await db(), { baseUrl: 'http://localhost:3000', log: (l) => lines.push(l) })).toBeNull()
    expect(lines).toEqual([])
    expect(await (await db()).select().from(members)).toHaveLength(0)
  })
})
