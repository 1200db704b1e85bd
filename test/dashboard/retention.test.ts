import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { analyticsEvents, auditEntries, businesses } from '../../db/schema/index.ts'
import { testDatabase, testEventsDatabase } from '../support/database.ts'
import { seedKey, testService } from '../support/service.ts'
import { addMember, getPage, memberOf, postForm, signIn } from './support.ts'

// Owners set how long their business's events are kept, in the
// business settings; the events page follows it at once.

const PAGE = '/dashboard/settings/business'
const FORM = `${PAGE}/retention`
const DAY = 86_400_000

async function storedDays(businessId: string) {
  const [row] = await (await testDatabase()).db.select().from(businesses).where(eq(businesses.id, businessId))
  return row!.eventRetentionDays
}

describe('event retention in the business settings', () => {
  test('an owner sets it, sees it, and resets it to the operator value; each change is audited as business.updated by the member', async () => {
    const service = await testService({ eventRetentionDays: 90 })
    const { businessId, session } = await memberOf(service)
    const page = await (await getPage(service, PAGE, session)).text()
    expect(page).toContain('Event retention')
    expect(page).toContain('<strong>90 days</strong>')
    expect(page).toContain('name="eventRetentionDays"')

    const saved = await postForm(service, FORM, { csrf: session.csrf, eventRetentionDays: '14' }, { cookie: session.cookie })
    expect(saved.status).toBe(303)
    expect(saved.headers.get('location')).toBe(`${PAGE}?saved=1#retention`)
    expect(await storedDays(businessId)).toBe(14)
    const after = await (await getPage(service, saved.headers.get('location')!, session)).text()
    expect(after).toContain('<strong>14 days</strong>')
    expect(after).toContain('Event retention saved')

    const reset = await postForm(service, FORM, { csrf: session.csrf, eventRetentionDays: '' }, { cookie: session.cookie })
    expect(reset.status).toBe(303)
    expect(await storedDays(businessId)).toBeNull()

    const trail = await (await testDatabase()).db.select().from(auditEntries).where(eq(auditEntries.businessId, businessId))
    const updates = trail.filter((e) => e.action === 'business.updated').sort((a, b) => a.at.getTime() - b.at.getTime())
    expect(updates.map((e) => [e.actor, e.changes])).toEqual([
      ['member:ada@example.com', { eventRetentionDays: { from: null, to: 14 } }],
      ['member:ada@example.com', { eventRetentionDays: { from: 14, to: null } }],
    ])
    const audit = await (await getPage(service, '/dashboard/settings/audit', session)).text()
    expect(audit).toContain('Business settings changed')
  })

  test('0, above the operator value, a fraction or words: the form again with its error (400), nothing changes', async () => {
    const service = await testService({ eventRetentionDays: 90 })
    const { businessId, session } = await memberOf(service)
    for (const bad of ['0', '91', '1.5', 'ninety', '-3']) {
      const response = await postForm(service, FORM, { csrf: session.csrf, eventRetentionDays: bad }, { cookie: session.cookie })
      expect(response.status, bad).toBe(400)
      const page = await response.text()
      expect(page, bad).toContain('Event retention must be a whole number of days from 1 to 90')
      expect(page, bad).toContain('aria-invalid="true"')
    }
    expect(await storedDays(businessId)).toBeNull()
  })

  test('a member who is not an owner sees the setting but no form, and a post is refused (403), changing nothing', async () => {
    const service = await testService({ eventRetentionDays: 90 })
    const { businessId } = await memberOf(service)
    await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const member = await signIn(service, 'bo@example.com')
    const page = await (await getPage(service, PAGE, member)).text()
    expect(page).toContain('<strong>90 days</strong>')
    expect(page).toContain('Only owners of the business change how long events are kept.')
    expect(page).not.toContain('name="eventRetentionDays"')
    const post = await postForm(service, FORM, { csrf: member.csrf, eventRetentionDays: '3' }, { cookie: member.cookie })
    expect(post.status).toBe(403)
    expect(await storedDays(businessId)).toBeNull()
  })

  test('the events page stops showing events past the new retention at once', async () => {
    const service = await testService({ eventRetentionDays: 90 })
    const { businessId, session } = await memberOf(service)
    const key = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const now = Date.now()
    await (await testEventsDatabase()).db.insert(analyticsEvents).values(
      [2, 20].map((days) => ({
        businessId,
        keyId: key.record.id,
        eventType: `aged_${days}`,
        occurredAt: new Date(now - days * DAY),
        receivedAt: new Date(now - days * DAY),
      })),
    )
    const before = await (await getPage(service, '/dashboard/events', session)).text()
    expect(before).toContain('aged_2')
    expect(before).toContain('aged_20')
    await postForm(service, FORM, { csrf: session.csrf, eventRetentionDays: '7' }, { cookie: session.cookie })
    const after = await (await getPage(service, '/dashboard/events', session)).text()
    expect(after).toContain('aged_2')
    expect(after).not.toContain('aged_20')
  })
})
