import { describe, expect, test } from 'bun:test'
import { fieldLabel } from '../../src/dashboard/audit-views.ts'
import { AUDITED_FIELDS } from '../../src/keys/service.ts'
import { createMemberService } from '../../src/members/service.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedBusiness, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, PASSWORD, postForm } from './support.ts'

// Issue 33 item 6: the dashboard's rough edges, each pinned (the phone-width menu and the
// password check before submit are in the browser: test/dashboard/browser-walk.test.ts).
const AUDIT = '/dashboard/settings/audit'

describe('addresses the dashboard does not have', () => {
  test('an unknown page answers a 404 page with the navigation, not JSON', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    for (const path of ['/dashboard/nope', '/dashboard/settings/developers/api-keys/extra/deep', '/dashboard/settings/nothing']) {
      const response = await getPage(service, path, session)
      expect(response.status).toBe(404)
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(response.headers.get('x-request-id')).toStartWith('req_')
      const page = await response.text()
      expect(page).toContain('<h1>Page not found</h1>')
      expect(page).toContain('id="sidenav"')
    }
  })

  test('a visitor gets the same page, leading to sign-in', async () => {
    const service = await testService()
    const response = await getPage(service, '/dashboard/nope')
    expect(response.status).toBe(404)
    const page = await response.text()
    expect(page).toContain('<h1>Page not found</h1>')
    expect(page).toContain('href="/dashboard/sign-in"')
  })

  test('a visit to an address that only takes a form answers a 405 page with Allow', async () => {
    const service = await testService()
    const response = await getPage(service, '/dashboard/sign-out')
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
    expect(await response.text()).toContain('<h1>Not a page</h1>')
  })

  test('the API keeps answering JSON', async () => {
    const service = await testService()
    const response = await call(service, '/api/v0/nope')
    expect(response.status).toBe(404)
    expect(await response.json()).toMatchObject({ error: { code: 'not_found' } })
  })
})

describe('the audit trail in words', () => {
  test('every field the key service records has a label of words', () => {
    for (const field of [...AUDITED_FIELDS, 'type', 'rolledFrom', 'email', 'role']) {
      expect(fieldLabel(field)).not.toBe(field)
      expect(fieldLabel(field)).toMatch(/^[A-Z][a-z]+( [A-Za-z]+)*$/)
    }
    // A field some later change records without a label still reads as words.
    expect(fieldLabel('webhookRetryLimit')).toBe('Webhook retry limit')
  })

  test('the policies and allowed IPs of a private key read as words, and no raw field name shows', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const server = await seedKey(service, businessId, { type: 'private', name: 'Server' })
    await service.services.keys.update(businessId, server.record.id, { allowedIps: ['203.0.113.0/24'], ipPolicy: 'report' }, TEST_AUTHOR)
    const page = await (await getPage(service, AUDIT, session)).text()
    const entry = page.slice(page.indexOf('data-action="key.updated"'))
    expect(entry).toContain('<th scope="row">Addresses outside the list</th>')
    expect(entry).toContain(
      'refused</span> <span class="arrow" aria-label="to">→</span> <span class="to">served and reported (report only)',
    )
    expect(entry).toContain(
      '<th scope="row">Allowed IPs</th><td><ins class="added"><span class="visually-hidden">added </span><code>+ 203.0.113.0/24</code></ins>',
    )
    expect(page).not.toMatch(/ipPolicy|allowedIps|enforce/)
  })

  test('allowing one origin shows the origin added, not the whole list struck through', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId, { allowedOrigins: ['example.com', 'www.example.org', 'shop.example.net'] })
    const allowed = await postForm(
      service,
      `${KEYS}/${site.record.id}/allow-origin`,
      { csrf: session.csrf, origin: 'http://localhost:5173' },
      { cookie: session.cookie },
    )
    expect(allowed.status).toBe(303)
    const page = await (await getPage(service, AUDIT, session)).text()
    const row = /<th scope="row">Allowed origins<\/th><td>(.*?)<\/td>/.exec(page.slice(page.indexOf('data-action="key.updated"')))![1]!
    expect(row).toBe(
      '<ins class="added"><span class="visually-hidden">added </span><code>+ http://localhost:5173</code></ins> <span class="muted small">(3 unchanged)</span>',
    )
    expect(row).not.toContain('example.com')
  })
})

describe('the key forms and list', () => {
  test('a refused create form comes back at the address it was sent to', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const form = await (await getPage(service, `${KEYS}/new`, session)).text()
    expect(form).toContain(`<form method="post" action="${KEYS}/new"`)
    const refused = await postForm(
      service,
      `${KEYS}/new`,
      { csrf: session.csrf, name: '', scopes: 'ANALYTICS_WRITE' },
      { cookie: session.cookie },
    )
    expect(refused.status).toBe(400)
    const page = await refused.text()
    expect(page).toContain(`<form method="post" action="${KEYS}/new"`)
    expect(page).toContain('id="error-summary"')
  })

  test('the empty key list holds a create button', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const page = await (await getPage(service, KEYS, session)).text()
    const empty = page.slice(page.indexOf('<div class="empty" id="no-keys">'))
    expect(empty.slice(0, empty.indexOf('</div>'))).toContain(`<a class="button primary" href="${KEYS}/new">Create public key</a>`)
  })
})

describe('choosing a password on a sign-in link', () => {
  test('two different passwords are refused by the server too, which keeps the first and asks for the second again', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service, 'Linked Ltd')
    const created = await createMemberService((await testDatabase()).db).create(
      businessId,
      { email: 'new@example.com', role: 'member' },
      TEST_AUTHOR,
      'member',
    )
    const token = created.signInLink!.token
    const form = await (await call(service, `/dashboard/sign-in/link?token=${token}`)).text()
    expect(form).toContain('<form method="post" action="/dashboard/sign-in/link" class="stack" data-password-pair>')
    const differ = await postForm(service, '/dashboard/sign-in/link', { token, password: PASSWORD, confirm: `${PASSWORD}!` })
    expect(differ.status).toBe(400)
    const page = await differ.text()
    expect(page).toMatch(new RegExp(`<input id="password" name="password" type="password"[^>]* value="${PASSWORD}"`))
    expect(page).toMatch(/<input id="confirm" name="confirm" type="password"[^>]* aria-invalid="true" autofocus>/)
    expect(page).toContain(
      '<p class="field-error" id="confirm-error" role="alert">The two passwords differ; type the same password again.</p>',
    )
    // A short password is not kept: it must be chosen again.
    const short = await (await postForm(service, '/dashboard/sign-in/link', { token, password: 'short', confirm: 'short' })).text()
    expect(short).not.toContain('value="short"')
  })
})
