import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accounts, members, memberSessions } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, testService } from '../support/service.ts'
import { getPage, KEYS, memberRows, PASSWORD, postForm, signIn } from './support.ts'

const db = async () => (await testDatabase()).db

describe('POST /admin/v0/businesses/:id/members', () => {
  test('with a password: 201 with the member, who can sign in at once', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/members`, {
      body: { email: ' Ada@Example.com', password: PASSWORD, role: 'owner' },
    })
    expect(response.status).toBe(201)
    const body = (await response.json()) as Record<string, unknown>
    expect(body).toMatchObject({ businessId, email: 'ada@example.com', role: 'owner', passwordSet: true })
    expect(body.signInLink).toBeUndefined()
    expect(body).not.toHaveProperty('passwordHash')
    const [row] = await memberRows()
    expect(row!.passwordHash).not.toContain(PASSWORD)
    expect((await signIn(service, 'ada@example.com')).cookie).toStartWith('keygate_session=')
  })

  test('without a password: 201 with a one-time sign-in link on which the member chooses one', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/members`, {
      body: { email: 'bob@example.com', role: 'member' },
      headers: { 'x-forwarded-proto': 'https', host: 'keys.example.com' },
    })
    expect(response.status).toBe(201)
    const body = (await response.json()) as { passwordSet: boolean; signInLink: { url: string; expiresAt: string } }
    expect(body.passwordSet).toBe(false)
    expect(body.signInLink.url).toStartWith('https://keys.example.com/dashboard/sign-in/link?token=')
    const token = new URL(body.signInLink.url).searchParams.get('token')!
    const chosen = await postForm(service, '/dashboard/sign-in/link', { token, password: PASSWORD, confirm: PASSWORD })
    expect(chosen.status).toBe(303)
  })

  test('an email already a member of the business answers 409 and adds nothing', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service, 'Acme')
    await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', role: 'owner' } })
    const response = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ADA@example.com', role: 'member' } })
    expect(response.status).toBe(409)
    expect((await errorOf(response)).message).toBe('ada@example.com is already a member of Acme.')
    expect(await memberRows()).toEqual([expect.objectContaining({ role: 'owner' })])
  })

  test("a person of another business gets a pending membership, invisible until they use the operator's link; one account", async () => {
    const service = await testService()
    const acme = await seedBusiness(service, 'Acme')
    const rival = await seedBusiness(service, 'Rival')
    await admin(service, `/businesses/${acme}/members`, { body: { email: 'ada@example.com', password: PASSWORD, role: 'owner' } })
    const response = await admin(service, `/businesses/${rival}/members`, { body: { email: 'Ada@Example.com', role: 'member' } })
    expect(response.status).toBe(201)
    const body = (await response.json()) as { pending: boolean; signInLink: { url: string } }
    expect(body).toMatchObject({ businessId: rival, email: 'ada@example.com', role: 'member', passwordSet: true, pending: true })
    const rows = await memberRows()
    expect(rows.map((m) => [m.businessId, m.role])).toEqual([
      [acme, 'owner'],
      [rival, 'member'],
    ])
    expect(rows[0]!.accountId).toBe(rows[1]!.accountId)
    expect(await (await db()).select().from(accounts)).toHaveLength(1)
    // Until she uses the link, her sessions know nothing of Rival.
    const session = await signIn(service, 'ada@example.com')
    expect(await (await getPage(service, KEYS, session)).text()).not.toContain('Rival')
    // An operator's link sets a new password (recovery), ends her other sessions, and joins Rival.
    const token = new URL(body.signInLink.url).searchParams.get('token')!
    const chosen = await postForm(service, '/dashboard/sign-in/link', { token, password: `${PASSWORD} 2`, confirm: `${PASSWORD} 2` })
    expect(chosen.status).toBe(303)
    expect((await getPage(service, KEYS, session)).status).toBe(303)
    const after = await signIn(service, 'ada@example.com', `${PASSWORD} 2`)
    expect(await (await getPage(service, KEYS, after)).text()).toContain('Rival')
  })

  test('a password for an email that already has an account answers 409 and changes neither', async () => {
    const service = await testService()
    const acme = await seedBusiness(service, 'Acme')
    const rival = await seedBusiness(service, 'Rival')
    await admin(service, `/businesses/${acme}/members`, { body: { email: 'ada@example.com', password: PASSWORD, role: 'owner' } })
    const [before] = await (await db()).select().from(accounts)
    const response = await admin(service, `/businesses/${rival}/members`, {
      body: { email: 'ada@example.com', password: 'another long password', role: 'owner' },
    })
    expect(response.status).toBe(409)
    expect((await errorOf(response)).message).toContain('already has an account')
    expect(await (await db()).select().from(accounts)).toEqual([before!])
    expect(await memberRows()).toHaveLength(1)
  })

  test('a bad role, email or short password answers 400 naming the field', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const role = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'a@example.com', role: 'admin' } })
    expect(role.status).toBe(400)
    expect((await errorOf(role)).message).toContain('role')
    const email = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'not an email', role: 'member' } })
    expect(email.status).toBe(400)
    expect((await errorOf(email)).message).toContain('is not an email address')
    const short = await admin(service, `/businesses/${businessId}/members`, {
      body: { email: 'a@example.com', password: 'short', role: 'member' },
    })
    expect(short.status).toBe(400)
    expect((await errorOf(short)).message).toContain('password')
    expect(await (await db()).select().from(members)).toHaveLength(0)
  })

  test('an unknown business answers 404', async () => {
    const service = await testService()
    const response = await admin(service, '/businesses/00000000-0000-4000-8000-000000000000/members', {
      body: { email: 'a@example.com', role: 'member' },
    })
    expect(response.status).toBe(404)
  })

  test('needs the admin token', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await call(service, `/admin/v0/businesses/${businessId}/members`, {
      body: { email: 'a@example.com', role: 'owner' },
    })
    expect(response.status).toBe(401)
    expect(await (await db()).select().from(members)).toHaveLength(0)
  })
})

describe('other member routes', () => {
  test('GET lists the business members without secrets', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', password: PASSWORD, role: 'owner' } })
    const response = await admin(service, `/businesses/${businessId}/members`)
    expect(response.status).toBe(200)
    const body = (await response.json()) as { data: Record<string, unknown>[] }
    expect(body.data).toHaveLength(1)
    expect(body.data[0]).toMatchObject({ email: 'ada@example.com', role: 'owner' })
    expect(JSON.stringify(body)).not.toContain('argon2')
  })

  test('a new sign-in link replaces a forgotten password and ends other sessions', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const created = (await (
      await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', password: PASSWORD, role: 'owner' } })
    ).json()) as { id: string }
    await signIn(service, 'ada@example.com')
    const response = await admin(service, `/members/${created.id}/sign-in-link`, { method: 'POST' })
    expect(response.status).toBe(201)
    const { signInLink } = (await response.json()) as { signInLink: { url: string } }
    const token = new URL(signInLink.url).searchParams.get('token')!
    const fresh = 'a brand new passphrase'
    expect((await postForm(service, '/dashboard/sign-in/link', { token, password: fresh, confirm: fresh })).status).toBe(303)
    expect(await (await db()).select().from(memberSessions)).toHaveLength(1)
    expect((await signIn(service, 'ada@example.com', fresh)).cookie).toStartWith('keygate_session=')
  })

  test('DELETE removes the member and ends their sessions', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const created = (await (
      await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', password: PASSWORD, role: 'owner' } })
    ).json()) as { id: string }
    const session = await signIn(service, 'ada@example.com')
    expect((await admin(service, `/members/${created.id}`, { method: 'DELETE' })).status).toBe(204)
    expect(await (await db()).select().from(members).where(eq(members.id, created.id))).toHaveLength(0)
    const page = await call(service, '/dashboard/settings/developers/api-keys', { headers: { cookie: session.cookie } })
    expect(page.status).toBe(303)
  })
})

describe('members in the audit trail', () => {
  test('adding and removing a member through the admin API each write one entry, actor admin with the request id; a 409 writes none', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const added = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', role: 'member' } })
    expect(added.status).toBe(201)
    const { id } = (await added.json()) as { id: string }
    expect((await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', role: 'owner' } })).status).toBe(
      409,
    )
    const removed = await admin(service, `/members/${id}`, { method: 'DELETE' })
    expect(removed.status).toBe(204)
    const trail = await admin(service, `/businesses/${businessId}/audit`)
    const { data } = (await trail.json()) as { data: { action: string; actor: string; requestId: string; changes: unknown }[] }
    expect(data).toEqual([
      expect.objectContaining({
        action: 'member.removed',
        actor: 'admin',
        requestId: removed.headers.get('x-request-id'),
        changes: { email: { from: 'ada@example.com', to: null }, role: { from: 'member', to: null } },
      }),
      expect.objectContaining({
        action: 'member.created',
        actor: 'admin',
        requestId: added.headers.get('x-request-id'),
        changes: { email: { from: null, to: 'ada@example.com' }, role: { from: null, to: 'member' } },
      }),
    ])
  })
})
