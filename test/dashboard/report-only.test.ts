import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm } from './support.ts'

// Issue 10 item 5: report-only origins from the key form, and a banner on such keys.
const db = async () => (await testDatabase()).db
const FIELDS = {
  name: 'Trial',
  description: '',
  origins: 'example.com',
  scopes: ['ANALYTICS_WRITE'],
  expiresOn: '',
  rateLimitLimit: '',
  rateLimitWindow: '',
}

describe('report-only in the dashboard', () => {
  test('the form offers the toggle; a report-only key serves a stranger origin, says so in a banner, and counts it', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const form = await (await getPage(service, `${KEYS}/new`, session)).text()
    expect(form).toContain('<label for="report-only">Report only: log refused origins, do not refuse them</label>')
    expect(form).not.toMatch(/name="reportOnly" checked/)

    const created = await postForm(service, `${KEYS}/new`, { csrf: session.csrf, ...FIELDS, reportOnly: 'on' }, { cookie: session.cookie })
    expect(created.status).toBe(303)
    const [row] = await (await db()).select().from(apiKeys)
    expect(row!.originPolicy).toBe('report')
    expect((await call(service, '/api/v0/whoami', { key: row!.publicKey!, origin: 'https://stranger.example.org' })).status).toBe(200)
    await service.services.usage.flush()

    const page = await (await getPage(service, `${KEYS}/${row!.id}`, session)).text()
    expect(page).toContain('id="report-only-banner"')
    expect(page).toContain('<strong>Report only.</strong>')
    expect(page).toContain('<code>https://stranger.example.org</code> <span class="badge report">served: report only</span>')
    const list = await (await getPage(service, KEYS, session)).text()
    expect(list).toContain('<span class="badge report">Report only</span>')
    const edit = await (await getPage(service, `${KEYS}/${row!.id}/edit`, session)).text()
    expect(edit).toMatch(/name="reportOnly" checked/)
  })

  test('turning it off in the edit form enforces the list again, audited as the member', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    await postForm(service, `${KEYS}/new`, { csrf: session.csrf, ...FIELDS, reportOnly: 'on' }, { cookie: session.cookie })
    const [row] = await (await db()).select().from(apiKeys)
    const saved = await postForm(service, `${KEYS}/${row!.id}/edit`, { csrf: session.csrf, ...FIELDS }, { cookie: session.cookie })
    expect(saved.status).toBe(303)
    const [after] = await (await db()).select().from(apiKeys)
    expect(after!.originPolicy).toBe('enforce')
    expect((await call(service, '/api/v0/whoami', { key: row!.publicKey!, origin: 'https://stranger.example.org' })).status).toBe(403)
    const page = await (await getPage(service, `${KEYS}/${row!.id}`, session)).text()
    expect(page).not.toContain('id="report-only-banner"')
    const updates = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.updated'))
    expect(updates).toEqual([
      expect.objectContaining({ actor: 'member:ada@example.com', changes: { originPolicy: { from: 'report', to: 'enforce' } } }),
    ])
  })
})
