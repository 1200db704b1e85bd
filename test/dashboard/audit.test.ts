import { describe, expect, test } from 'bun:test'
import { auditEntries } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { TEST_AUTHOR, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm } from './support.ts'

// Issue 10 item 4: the audit trail in the dashboard, of the business and of each key.
const AUDIT = '/dashboard/settings/audit'

function actions(page: string): string[] {
  return [...page.matchAll(/<li class="entry" data-action="([a-z.]+)">/g)].map((m) => m[1]!)
}

describe('the audit trail in the dashboard', () => {
  test("the business's trail shows every change, newest first, with who made it and each field from -> to", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const key = await seedKey(service, businessId, { name: 'Shop', allowedOrigins: ['example.com'] })
    const edit = await postForm(
      service,
      `${KEYS}/${key.record.id}/edit`,
      {
        csrf: session.csrf,
        name: 'Web shop',
        description: '',
        origins: 'example.com\nlocalhost:3000',
        scopes: ['ANALYTICS_WRITE'],
        expiresOn: '',
        rateLimitLimit: '',
        rateLimitWindow: '',
      },
      { cookie: session.cookie },
    )
    expect(edit.status).toBe(303)
    await service.services.keys.revoke(businessId, key.record.id, TEST_AUTHOR)

    const page = await (await getPage(service, AUDIT, session)).text()
    // The member's own addition (by the operator, in memberOf) is the oldest entry.
    expect(actions(page)).toEqual(['key.revoked', 'key.updated', 'key.created', 'member.created'])
    const updated = page.slice(page.indexOf('data-action="key.updated"'), page.indexOf('data-action="key.created"'))
    expect(updated).toContain('by ada@example.com')
    expect(updated).toMatch(
      /<th scope="row">Name<\/th><td><span class="from"><code>Shop<\/code><\/span> <span class="arrow" aria-label="to">→<\/span> <span class="to"><code>Web shop<\/code><\/span>/,
    )
    // A list shows what was added and removed, not the whole list struck through and rewritten.
    const origins = /<th scope="row">Allowed origins<\/th><td>(.*?)<\/td>/.exec(updated)![1]!
    expect(origins).toBe(
      '<ins class="added"><span class="visually-hidden">added </span><code>+ localhost:3000</code></ins> <span class="muted small">(1 unchanged)</span>',
    )
    // Unchanged fields are not listed.
    expect(updated).not.toContain('<th scope="row">Scopes</th>')
    const revoked = page.slice(page.indexOf('data-action="key.revoked"'), page.indexOf('data-action="key.updated"'))
    expect(revoked).toContain('by an operator (admin API)')
    expect(page).toContain('aria-current="page">Audit trail</a>')
  })

  test("a key's page shows its last changes, and its own trail page only its entries", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const shop = await seedKey(service, businessId, { name: 'Shop' })
    const blog = await seedKey(service, businessId, { name: 'Blog' })
    const rolled = await postForm(
      service,
      `${KEYS}/${shop.record.id}/roll`,
      { csrf: session.csrf, graceSeconds: '3600' },
      { cookie: session.cookie },
    )
    expect(rolled.status).toBe(303)

    const page = await (await getPage(service, `${KEYS}/${shop.record.id}`, session)).text()
    const trail = page.slice(page.indexOf('id="trail"'))
    expect(actions(trail)).toEqual(['key.rolled', 'key.created'])
    expect(trail).toContain('<th scope="row">Replaced by</th>')
    expect(trail).toContain('by ada@example.com')
    const own = await (await getPage(service, `${KEYS}/${blog.record.id}/audit`, session)).text()
    expect(actions(own)).toEqual(['key.created'])
  })

  test('pages of 50 with an Older link; a mangled cursor shows the newest page', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const key = await seedKey(service, businessId, { name: 'Busy' })
    for (let i = 0; i < 55; i++) await service.services.keys.update(businessId, key.record.id, { name: `Busy ${i}` }, TEST_AUTHOR)
    const first = await (await getPage(service, AUDIT, session)).text()
    expect(actions(first)).toHaveLength(50)
    const next = /href="\/dashboard\/settings\/audit\?cursor=([^"]+)">Older</.exec(first)![1]!
    const second = await (await getPage(service, `${AUDIT}?cursor=${next}`, session)).text()
    // 55 updates, the key's creation and the member's addition.
    expect(actions(second)).toHaveLength(7)
    expect(second).not.toContain('>Older<')
    expect(actions(await (await getPage(service, `${AUDIT}?cursor=garbage`, session)).text())).toHaveLength(50)
  })

  test("another business's trail is never shown, and its key's trail page is a 404", async () => {
    const service = await testService()
    const { businessId } = await memberOf(service, 'Acme', 'ada@example.com')
    const key = await seedKey(service, businessId, { name: 'Acme secret plans' })
    const { session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    const page = await (await getPage(service, AUDIT, rival)).text()
    expect(actions(page)).toEqual(['member.created'])
    expect(page).toContain('rex@rival.example')
    expect(page).not.toContain('Acme secret plans')
    expect(page).not.toContain('ada@example.com')
    expect((await getPage(service, `${KEYS}/${key.record.id}/audit`, rival)).status).toBe(404)
    // Acme's key and member, Rival's member.
    expect(await (await testDatabase()).db.select().from(auditEntries)).toHaveLength(3)
  })

  test('signed-out visitors are sent to sign in', async () => {
    const service = await testService()
    const response = await getPage(service, AUDIT)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toStartWith('/dashboard/sign-in?next=')
  })
})
