import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { businesses } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { testService } from '../support/service.ts'
import { addMember, getPage, memberOf, postForm, signIn } from './support.ts'

// Issue 10 item 6: the identity secret in the business settings, shown once, owners only.
const PAGE = '/dashboard/settings/business'
const db = async () => (await testDatabase()).db

async function secretOf(businessId: string) {
  const [row] = await (await db()).select({ secret: businesses.identitySecret }).from(businesses).where(eq(businesses.id, businessId))
  return row!.secret
}

describe('the identity secret in the dashboard', () => {
  test('an owner sets it and sees it once; rotating replaces it', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const before = await (await getPage(service, PAGE, session)).text()
    expect(before).toContain('Not set')
    expect(before).toContain('Confirm: set a secret')

    const set = await postForm(service, `${PAGE}/identity-secret`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(set.status).toBe(201)
    expect(set.headers.get('cache-control')).toBe('no-store')
    const first = await secretOf(businessId)
    expect(first).toMatch(/^ids_[0-9a-f]{64}$/)
    expect(await set.text()).toContain(`value="${first}"`)

    const later = await (await getPage(service, PAGE, session)).text()
    expect(later).not.toContain(first!)
    expect(later).toContain('has an identity secret')
    expect(later).toContain('Confirm: rotate the secret')

    const rotated = await postForm(service, `${PAGE}/identity-secret`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(rotated.status).toBe(201)
    const second = await secretOf(businessId)
    expect(second).not.toBe(first)
    expect(await rotated.text()).toContain(`value="${second}"`)
  })

  test('a member (not an owner) sees the status only, and a post changes nothing', async () => {
    const service = await testService()
    const { businessId } = await memberOf(service)
    await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const member = await signIn(service, 'bo@example.com')
    const page = await (await getPage(service, PAGE, member)).text()
    expect(page).toContain('Only owners of the business set or rotate the secret.')
    expect(page).not.toContain('Confirm: set a secret')
    const post = await postForm(service, `${PAGE}/identity-secret`, { csrf: member.csrf }, { cookie: member.cookie })
    expect(post.status).toBe(403)
    expect(await post.text()).not.toContain('ids_')
    expect(await secretOf(businessId)).toBeNull()
  })

  test("without the session's CSRF token, or from another site, nothing is set; each business has its own", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    expect((await postForm(service, `${PAGE}/identity-secret`, { csrf: 'z'.repeat(43) }, { cookie: session.cookie })).status).toBe(403)
    expect(
      (
        await postForm(
          service,
          `${PAGE}/identity-secret`,
          { csrf: session.csrf },
          { cookie: session.cookie, headers: { origin: 'https://evil.example.org' } },
        )
      ).status,
    ).toBe(403)
    expect(await secretOf(businessId)).toBeNull()
    const { businessId: rivalId, session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    expect((await postForm(service, `${PAGE}/identity-secret`, { csrf: rival.csrf }, { cookie: rival.cookie })).status).toBe(201)
    expect(await secretOf(rivalId)).toMatch(/^ids_/)
    expect(await secretOf(businessId)).toBeNull()
  })
})
