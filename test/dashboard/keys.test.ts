import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { TEST_AUTHOR, behindTrustedProxy, call, errorOf, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm, type Session } from './support.ts'

const db = async () => (await testDatabase()).db

async function stored(id: string) {
  const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, id))
  return row!
}

async function onlyKey() {
  const rows = await (await db()).select().from(apiKeys)
  expect(rows).toHaveLength(1)
  return rows[0]!
}

function create(service: Awaited<ReturnType<typeof testService>>, session: Session, fields: Record<string, string | string[]>) {
  return postForm(service, `${KEYS}/new`, { csrf: session.csrf, ...fields }, { cookie: session.cookie })
}

const VALID = {
  name: 'Marketing site',
  description: 'www and blog',
  origins: 'Example.com\n\nlocalhost:3000\n',
  scopes: ['ANALYTICS_WRITE', 'BLOG_READ'],
}

describe('the key list', () => {
  test('shows each key with its hint, scopes, origins, expiry, last use, creator and state, never a private key', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const pub = await seedKey(service, businessId, { name: 'Web', allowedOrigins: ['example.com'] })
    const priv = await seedKey(service, businessId, { name: 'Backend', type: 'private' })
    const old = await seedKey(service, businessId, { name: 'Old web' })
    const lapsed = await seedKey(service, businessId, { name: 'Lapsed' })
    await (await db())
      .update(apiKeys)
      .set({ lastUsedAt: new Date(Date.now() - 3 * 60_000 - 5000) })
      .where(eq(apiKeys.id, pub.record.id))
    await (await db())
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 60_000) })
      .where(eq(apiKeys.id, lapsed.record.id))
    await service.services.keys.revoke(businessId, old.record.id, TEST_AUTHOR)

    const response = await getPage(service, KEYS, session)
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const page = await response.text()
    for (const text of [
      'Web',
      'Backend',
      'Old web',
      'Lapsed',
      pub.record.keyHint,
      priv.record.keyHint,
      'ANALYTICS_WRITE',
      'example.com',
      '3 minutes ago',
      'never',
      'by test',
      'Revoked',
      'expired',
    ]) {
      expect(page).toContain(text)
    }
    expect(page).not.toContain(priv.key)
    expect(page).not.toContain(pub.key)
  })

  test('escapes what members typed', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    await seedKey(service, businessId, { name: '<script>alert(1)</script>' })
    const page = await (await getPage(service, KEYS, session)).text()
    expect(page).not.toContain('<script>alert(1)</script>')
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
  })
})

describe('creating a public key', () => {
  test('stores it with canonical origins and the member as creator, then shows the key and its snippet', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const response = await create(service, session, { ...VALID, expiresOn: '2099-12-31' })
    expect(response.status).toBe(303)
    const row = await onlyKey()
    expect(response.headers.get('location')).toBe(`${KEYS}/${row.id}?created=1`)
    expect(row).toMatchObject({
      businessId,
      type: 'public',
      name: 'Marketing site',
      description: 'www and blog',
      allowedOrigins: ['example.com', 'localhost:3000'],
      scopes: ['ANALYTICS_WRITE', 'BLOG_READ'],
      createdBy: 'ada@example.com',
    })
    expect(row.expiresAt!.toISOString()).toBe('2099-12-31T00:00:00.000Z')
    const page = await (await getPage(service, response.headers.get('location')!, session)).text()
    expect(page).toContain('Your public key is ready')
    expect(page).toContain(`value="${row.publicKey}"`)
    expect(page).toContain(
      `&lt;script async src=&quot;http://localhost/sdk/v0.js&quot; data-key=&quot;${row.publicKey}&quot;&gt;&lt;/script&gt;`,
    )
  })

  test('the new key works from an allowed origin', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    await create(service, session, VALID)
    const row = await onlyKey()
    const whoami = await call(service, '/api/v0/whoami', { key: row.publicKey!, origin: 'https://www.example.com' })
    expect(whoami.status).toBe(200)
  })

  test('an invalid origin is explained next to the field, values are kept, and nothing is stored', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await create(service, session, { ...VALID, origins: 'example.com\n*.example.com\ncom' })
    expect(response.status).toBe(400)
    const page = await response.text()
    expect(page).toContain('2 fields need a fix')
    expect(page).toContain('&quot;*.example.com&quot; is a wildcard, which is not supported')
    expect(page).toContain('&quot;com&quot; is a public suffix')
    // Each entry is named once in its explanation, not repeated as a prefix.
    expect(page).not.toContain('&quot;com&quot;: &quot;com&quot;')
    expect(page).toContain('value="Marketing site"')
    expect(page).toMatch(/<textarea id="origins"[^>]*aria-invalid="true"[^>]*>example.com\n\*.example.com\ncom<\/textarea>/)
    expect(await (await db()).select().from(apiKeys)).toHaveLength(0)
  })

  test('no origin at all is refused', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await create(service, session, { ...VALID, origins: '  \n ' })
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('Enter at least one allowed origin')
  })

  test('a missing name and no scope are refused', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await create(service, session, { name: '   ', origins: 'example.com' })
    expect(response.status).toBe(400)
    const page = await response.text()
    expect(page).toContain('Enter a name of 1 to 100 characters.')
    expect(page).toContain('Choose at least one scope')
    expect(await (await db()).select().from(apiKeys)).toHaveLength(0)
  })

  test('a scope public endpoints do not use is refused even if the form was tampered with', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await create(service, session, { ...VALID, scopes: ['ANALYTICS_WRITE', 'MEMORY_READ'] })
    expect(response.status).toBe(400)
    expect(await (await db()).select().from(apiKeys)).toHaveLength(0)
  })

  test('an expiry date that has begun is refused', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const today = new Date().toISOString().slice(0, 10)
    const response = await create(service, session, { ...VALID, expiresOn: today })
    expect(response.status).toBe(400)
    expect(await response.text()).toContain(`${today} has already begun`)
  })

  test('a date that is not a date is refused', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await create(service, session, { ...VALID, expiresOn: '2099-02-30' })
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('&quot;2099-02-30&quot; is not a date')
  })
})

describe('editing a key', () => {
  test('changes name, description, origins, scopes and expiry', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record, key } = await seedKey(service, businessId, { name: 'Web', allowedOrigins: ['example.com'] })
    const form = await getPage(service, `${KEYS}/${record.id}/edit`, session)
    expect(form.status).toBe(200)
    expect(await form.text()).toContain('value="Web"')
    const response = await postForm(
      service,
      `${KEYS}/${record.id}/edit`,
      {
        csrf: session.csrf,
        name: 'Shop',
        description: 'the shop',
        origins: 'shop.example.org',
        scopes: ['FLOW_TRIGGER'],
        expiresOn: '2099-01-01',
      },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${KEYS}/${record.id}?saved=1`)
    const row = await stored(record.id)
    expect(row).toMatchObject({ name: 'Shop', description: 'the shop', allowedOrigins: ['shop.example.org'], scopes: ['FLOW_TRIGGER'] })
    expect(row.expiresAt!.toISOString()).toBe('2099-01-01T00:00:00.000Z')
    expect((await call(service, '/api/v0/whoami', { key, origin: 'https://example.com' })).status).toBe(403)
  })

  test('sets the rate limit, shows the service default when there is none, and refuses half a limit', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId)
    const form = await (await getPage(service, `${KEYS}/${record.id}/edit`, session)).text()
    expect(form).toContain('service default: 300 requests per 60 seconds')
    const fields = { csrf: session.csrf, name: 'Web', origins: 'example.com', scopes: 'ANALYTICS_WRITE' }
    const saved = await postForm(
      service,
      `${KEYS}/${record.id}/edit`,
      { ...fields, rateLimitLimit: '120', rateLimitWindow: '60' },
      { cookie: session.cookie },
    )
    expect(saved.status).toBe(303)
    expect(await stored(record.id)).toMatchObject({ rateLimitLimit: 120, rateLimitWindowSeconds: 60 })
    const half = await postForm(
      service,
      `${KEYS}/${record.id}/edit`,
      { ...fields, rateLimitLimit: '120', rateLimitWindow: '' },
      { cookie: session.cookie },
    )
    expect(half.status).toBe(400)
    expect(await half.text()).toContain('Enter whole numbers for both the requests and the seconds')
    const cleared = await postForm(
      service,
      `${KEYS}/${record.id}/edit`,
      { ...fields, rateLimitLimit: '', rateLimitWindow: '' },
      { cookie: session.cookie },
    )
    expect(cleared.status).toBe(303)
    expect(await stored(record.id)).toMatchObject({ rateLimitLimit: null, rateLimitWindowSeconds: null })
  })

  test('keeps an expiry set to the second when its day is left as it was', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { expiresAt: '2099-06-01T13:45:00.000Z' })
    const response = await postForm(
      service,
      `${KEYS}/${record.id}/edit`,
      { csrf: session.csrf, name: 'Renamed', origins: 'example.com', scopes: 'ANALYTICS_WRITE', expiresOn: '2099-06-01' },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(303)
    expect((await stored(record.id)).expiresAt!.toISOString()).toBe('2099-06-01T13:45:00.000Z')
  })

  test('refuses an invalid origin on the server too', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId)
    const response = await postForm(
      service,
      `${KEYS}/${record.id}/edit`,
      { csrf: session.csrf, name: 'Web', origins: 'example.com:8080', scopes: 'ANALYTICS_WRITE' },
      { cookie: session.cookie },
    )
    expect(response.status).toBe(400)
    expect(await response.text()).toContain(
      '&quot;example.com:8080&quot; has a port but no scheme; write &quot;https://example.com:8080&quot;',
    )
    expect((await stored(record.id)).allowedOrigins).toEqual(['example.com'])
  })

  test('is offered for private keys too, whose plaintext is still never shown', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record, key } = await seedKey(service, businessId, { type: 'private' })
    const page = await getPage(service, `${KEYS}/${record.id}`, session)
    const text = await page.text()
    expect(page.status).toBe(200)
    expect(text).not.toContain(key)
    expect(text).toContain('cannot be shown again')
    expect(text).toContain(`href="${KEYS}/${record.id}/edit"`)
    expect(await (await getPage(service, KEYS, session)).text()).toContain(`href="${KEYS}/${record.id}/edit"`)
    const form = await getPage(service, `${KEYS}/${record.id}/edit`, session)
    expect(form.status).toBe(200)
    const fields = await form.text()
    expect(fields).not.toContain(key)
    expect(fields).toContain('<textarea id="allowed-ips" name="allowedIps"')
    expect(fields).toContain('name="ipReportOnly"')
    expect(fields).not.toContain('name="origins"')
    // A private key's budget is the key's own, and every scope is offered.
    expect(fields).toContain('service default: 6000 requests per 60 seconds')
    expect(fields).toContain('value="MEMORY_WRITE"')
  })

  test("a private key's page shows its allowed IPs and IP policy", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { type: 'private' })
    const open = await (await getPage(service, `${KEYS}/${record.id}`, session)).text()
    expect(open).toContain('Allowed IPs')
    expect(open).toContain('any address')
    await service.services.keys.update(null, record.id, { allowedIps: ['203.0.113.0/24'], ipPolicy: 'report' }, TEST_AUTHOR)
    const restricted = await (await getPage(service, `${KEYS}/${record.id}`, session)).text()
    expect(restricted).toContain('203.0.113.0/24')
    expect(restricted).toContain('Report only')
  })

  test("the key list shows a private key's allowed IPs where a public key shows its origins", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { type: 'private', name: 'Backend' })
    const row = async () => {
      const page = await (await getPage(service, KEYS, session)).text()
      return page.slice(page.indexOf(`data-key-id="${record.id}"`), page.indexOf('</tr>', page.indexOf(`data-key-id="${record.id}"`)))
    }
    const open = await row()
    expect(open).toContain('any address')
    expect(open).not.toContain('Report only')
    await service.services.keys.update(
      null,
      record.id,
      { allowedIps: ['203.0.113.0/24', '2001:db8::/48'], ipPolicy: 'report' },
      TEST_AUTHOR,
    )
    const restricted = await row()
    expect(restricted).toContain('<li><code>203.0.113.0/24</code></li><li><code>2001:db8::/48</code></li>')
    expect(restricted).not.toContain('any address')
    expect(restricted).toContain('Report only')
  })

  test("a private key's page lists the addresses it refused, with each one's network", async () => {
    const service = await testService({ clientAddress: behindTrustedProxy })
    const { businessId, session } = await memberOf(service)
    const { record, key } = await seedKey(service, businessId, { type: 'private' })
    await service.services.keys.update(null, record.id, { allowedIps: ['203.0.113.0/24'] }, TEST_AUTHOR)
    const refused = await call(service, '/api/v0/whoami', { key, headers: { 'x-forwarded-for': '198.51.100.77' } })
    expect(refused.status).toBe(403)
    await service.services.usage.flush()
    const page = await (await getPage(service, `${KEYS}/${record.id}`, session)).text()
    expect(page).toContain('Refused addresses')
    expect(page).toContain('198.51.100.77')
    expect(page).toContain('198.51.100.0/24')
  })
})

describe("editing a private key's allowed IPs", () => {
  /** A member's private key "Backend", and `edit`: its form posted with `fields` over valid ones. */
  async function privateKeyToEdit() {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { type: 'private', name: 'Backend' })
    const path = `${KEYS}/${record.id}/edit`
    const edit = (fields: Record<string, string | string[]>) =>
      postForm(service, path, { csrf: session.csrf, name: 'Backend', scopes: 'ANALYTICS_READ', ...fields }, { cookie: session.cookie })
    return { service, businessId, session, record, path, edit }
  }

  test('stores the entries canonical, under the member in the trail', async () => {
    const { service, session, record, path, edit } = await privateKeyToEdit()
    const response = await edit({ allowedIps: ' 203.0.113.7 \n\n2001:DB8:0:0:0:0:0:0/48\n192.0.2.1/32\n203.0.113.7' })
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${KEYS}/${record.id}?saved=1`)
    expect(await stored(record.id)).toMatchObject({ allowedIps: ['203.0.113.7', '2001:db8::/48', '192.0.2.1'], ipPolicy: 'enforce' })
    const trail = await (await db())
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.keyId, record.id), eq(auditEntries.action, 'key.updated')))
    expect(trail).toEqual([
      expect.objectContaining({
        actor: 'member:ada@example.com',
        changes: { allowedIps: { from: [], to: ['203.0.113.7', '2001:db8::/48', '192.0.2.1'] } },
      }),
    ])
    const form = await (await getPage(service, path, session)).text()
    expect(form).toContain('>203.0.113.7\n2001:db8::/48\n192.0.2.1</textarea>')
  })

  test('a range with host bits set is refused next to the field, with the range meant; values kept, nothing stored', async () => {
    const { record, edit } = await privateKeyToEdit()
    const response = await edit({ name: 'Renamed', allowedIps: '203.0.113.7\n198.51.100.7/24' })
    expect(response.status).toBe(400)
    const page = await response.text()
    expect(page).toContain('one field needs a fix')
    expect(page).toContain('<a href="#allowed-ips">&quot;198.51.100.7/24&quot; has host bits set: did you mean 198.51.100.0/24?')
    expect(page).toMatch(/<ul class="field-error" id="allowed-ips-error"[^>]*><li>&quot;198.51.100.7\/24&quot; has host bits set/)
    expect(page).toMatch(/<textarea id="allowed-ips"[^>]*aria-invalid="true"[^>]*>203.0.113.7\n198.51.100.7\/24<\/textarea>/)
    expect(page).toContain('value="Renamed"')
    expect(await stored(record.id)).toMatchObject({ name: 'Backend', allowedIps: [] })
    const updates = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'key.updated'))
    expect(updates).toHaveLength(0)
  })

  test('the IP report-only checkbox sets ipPolicy "report", and unticking it enforces again', async () => {
    const { service, session, record, path, edit } = await privateKeyToEdit()
    expect((await edit({ allowedIps: '203.0.113.0/24', ipReportOnly: 'on' })).status).toBe(303)
    expect(await stored(record.id)).toMatchObject({ ipPolicy: 'report', originPolicy: 'enforce' })
    expect(await (await getPage(service, path, session)).text()).toMatch(
      /<input type="checkbox" id="ip-report-only" name="ipReportOnly" checked/,
    )
    expect((await edit({ allowedIps: '203.0.113.0/24' })).status).toBe(303)
    expect((await stored(record.id)).ipPolicy).toBe('enforce')
  })

  test("takes any scope and the key's own rate limit: the public keys' limits do not apply", async () => {
    const { record, edit } = await privateKeyToEdit()
    const response = await edit({ scopes: ['MEMORY_READ', 'AUDIENCE_PERSON_READ'], rateLimitLimit: '20000', rateLimitWindow: '60' })
    expect(response.status).toBe(303)
    expect(await stored(record.id)).toMatchObject({
      scopes: ['MEMORY_READ', 'AUDIENCE_PERSON_READ'],
      rateLimitLimit: 20000,
      rateLimitWindowSeconds: 60,
      allowedOrigins: [],
    })
  })

  test('a tampered form cannot give a private key origins, nor a public key allowed IPs', async () => {
    const { service, businessId, session, record, edit } = await privateKeyToEdit()
    expect((await edit({ origins: 'evil.example' })).status).toBe(303)
    expect((await stored(record.id)).allowedOrigins).toEqual([])
    const site = await seedKey(service, businessId)
    const onPublic = await postForm(
      service,
      `${KEYS}/${site.record.id}/edit`,
      { csrf: session.csrf, name: 'Web', origins: 'example.com', scopes: 'ANALYTICS_WRITE', allowedIps: '203.0.113.7', ipReportOnly: 'on' },
      { cookie: session.cookie },
    )
    expect(onPublic.status).toBe(303)
    expect(await stored(site.record.id)).toMatchObject({ allowedIps: [], ipPolicy: 'enforce' })
  })
})

describe('allowing a refused address in one click', () => {
  /** A private key limited to 203.0.113.0/24 that refused 198.51.100.77 and 2001:db8:85a3::8a2e:370:7334. */
  async function refusedKey() {
    const service = await testService({ clientAddress: behindTrustedProxy })
    const { businessId, session } = await memberOf(service)
    const { record, key } = await seedKey(service, businessId, { type: 'private' })
    await service.services.keys.update(null, record.id, { allowedIps: ['203.0.113.0/24'] }, TEST_AUTHOR)
    for (const address of ['198.51.100.77', '2001:db8:85a3::8a2e:370:7334']) {
      expect((await call(service, '/api/v0/whoami', { key, headers: { 'x-forwarded-for': address } })).status).toBe(403)
    }
    await service.services.usage.flush()
    const allowIp = (entry: string, keyId = record.id) =>
      postForm(service, `${KEYS}/${keyId}/allow-ip`, { csrf: session.csrf, entry }, { cookie: session.cookie })
    return { service, businessId, session, record, key, allowIp }
  }

  test('the panel offers the address and its /24 or /64, each previewing the list it makes', async () => {
    const { service, session, record } = await refusedKey()
    const page = await (await getPage(service, `${KEYS}/${record.id}`, session)).text()
    for (const entry of ['198.51.100.77', '198.51.100.0/24', '2001:db8:85a3::8a2e:370:7334', '2001:db8:85a3::/64']) {
      expect(page).toContain(`<input type="hidden" name="entry" value="${entry}">`)
      expect(page).toContain(`Confirm: allow ${entry}`)
    }
    expect(page).toContain(`action="${KEYS}/${record.id}/allow-ip"`)
    expect(page).toContain('<li><code>203.0.113.0/24</code></li><li class="added"><code>198.51.100.0/24</code>')
  })

  test('adds the address, then its /24; a second click changes nothing; the API then serves that address', async () => {
    const { service, session, record, key, allowIp } = await refusedKey()
    const first = await allowIp('198.51.100.77')
    expect(first.status).toBe(303)
    expect(first.headers.get('location')).toBe(`${KEYS}/${record.id}?allowed=198.51.100.77#refused-ips`)
    expect((await stored(record.id)).allowedIps).toEqual(['203.0.113.0/24', '198.51.100.77'])
    const page = await (await getPage(service, first.headers.get('location')!, session)).text()
    expect(page).toContain('Added <code>198.51.100.77</code> to the allowed IPs.')
    expect(page).toContain('Allowed now by <code>198.51.100.77</code>')
    const served = await call(service, '/api/v0/whoami', { key, headers: { 'x-forwarded-for': '198.51.100.77' } })
    expect(served.status).toBe(200)

    expect((await allowIp('198.51.100.0/24')).status).toBe(303)
    expect((await allowIp('198.51.100.0/24')).status).toBe(303)
    expect((await stored(record.id)).allowedIps).toEqual(['203.0.113.0/24', '198.51.100.77', '198.51.100.0/24'])
    expect((await call(service, '/api/v0/whoami', { key, headers: { 'x-forwarded-for': '198.51.100.9' } })).status).toBe(200)
    const trail = await (await db())
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.keyId, record.id), eq(auditEntries.actor, 'member:ada@example.com')))
    expect(trail).toHaveLength(2)
  })

  test("adds an IPv6 address's /64, written canonical", async () => {
    const { service, record, key, allowIp } = await refusedKey()
    const response = await allowIp('2001:DB8:85A3:0:0:0:0:0/64')
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${KEYS}/${record.id}?allowed=${encodeURIComponent('2001:db8:85a3::/64')}#refused-ips`)
    expect((await stored(record.id)).allowedIps).toEqual(['203.0.113.0/24', '2001:db8:85a3::/64'])
    const served = await call(service, '/api/v0/whoami', { key, headers: { 'x-forwarded-for': '2001:db8:85a3::1' } })
    expect(served.status).toBe(200)
  })

  test('a bad entry is a 400 that changes nothing', async () => {
    const { service, businessId, record, allowIp } = await refusedKey()
    for (const entry of ['198.51.100.7/24', 'example.com', '', '10.0.0.0/33']) {
      const response = await allowIp(entry)
      expect({ entry, status: response.status }).toEqual({ entry, status: 400 })
      expect(await response.text()).toContain('Nothing was changed')
    }
    expect((await stored(record.id)).allowedIps).toEqual(['203.0.113.0/24'])
    // A public key takes no allowed IPs: the key rules refuse it.
    const site = await seedKey(service, businessId)
    expect((await allowIp('198.51.100.77', site.record.id)).status).toBe(400)
    expect((await stored(site.record.id)).allowedIps).toEqual([])
  })

  test('a crafted link cannot make the page claim an address was added', async () => {
    const { service, session, record } = await refusedKey()
    const page = await (await getPage(service, `${KEYS}/${record.id}?allowed=198.51.100.77`, session)).text()
    expect(page).not.toContain('Added <code>')
  })

  test('a revoked key offers no Allow, and refuses one with 409', async () => {
    const { service, session, record, allowIp } = await refusedKey()
    await service.services.keys.revoke(null, record.id, TEST_AUTHOR)
    const page = await (await getPage(service, `${KEYS}/${record.id}`, session)).text()
    expect(page).toContain('198.51.100.77')
    expect(page).not.toContain('Confirm: allow')
    expect((await allowIp('198.51.100.77')).status).toBe(409)
    expect((await stored(record.id)).allowedIps).toEqual(['203.0.113.0/24'])
  })

  test('on a key with an empty list, the preview says that the first entry turns the restriction on', async () => {
    const { service, session, record } = await refusedKey()
    await service.services.keys.update(null, record.id, { allowedIps: [] }, TEST_AUTHOR)
    const page = await (await getPage(service, `${KEYS}/${record.id}`, session)).text()
    expect(page).toContain('The list is empty now: this key works from any address.')
    expect(page).toContain('Adding this entry turns the')
  })
})

describe('revoking a key', () => {
  test('asks for confirmation, then revokes; the next API call is refused', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record, key } = await seedKey(service, businessId, { name: 'Web' })
    const confirm = await getPage(service, `${KEYS}/${record.id}/revoke`, session)
    expect(confirm.status).toBe(200)
    expect(await confirm.text()).toContain('Revoke <q>Web</q>?')
    expect((await stored(record.id)).revokedAt).toBeNull()
    const response = await postForm(service, `${KEYS}/${record.id}/revoke`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${KEYS}?revoked=1`)
    expect((await stored(record.id)).revokedAt).not.toBeNull()
    const refused = await call(service, '/api/v0/whoami', { key, origin: 'https://example.com' })
    expect(refused.status).toBe(401)
    expect((await errorOf(refused)).code).toBe('invalid_api_key')
  })

  test('works for private keys too', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { type: 'private' })
    const response = await postForm(service, `${KEYS}/${record.id}/revoke`, { csrf: session.csrf }, { cookie: session.cookie })
    expect(response.status).toBe(303)
    expect((await stored(record.id)).revokedAt).not.toBeNull()
  })
})

describe('the origin tester', () => {
  test('names the entry that matched', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { allowedOrigins: ['example.com', 'localhost:3000'] })
    const page = await (
      await getPage(service, `${KEYS}/${record.id}?origin=${encodeURIComponent('https://shop.example.com')}`, session)
    ).text()
    expect(page).toContain('<strong>Accepted.</strong> The entry <code>example.com</code> matches <code>https://shop.example.com</code>')
  })

  test("gives the matcher's reason when nothing matched", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { allowedOrigins: ['example.com'] })
    const response = await getPage(service, `${KEYS}/${record.id}/origin-test?origin=${encodeURIComponent('http://example.com')}`, session)
    expect(response.status).toBe(200)
    const body = (await response.json()) as { allowed: boolean; reason: string; keyState: string }
    expect(body.allowed).toBe(false)
    expect(body.reason).toContain('Origin "http://example.com" is not allowed')
    expect(body.keyState).toBe('active')
  })

  test('treats an empty origin as a request without an Origin header', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId, { allowedOrigins: ['*'] })
    const response = await getPage(service, `${KEYS}/${record.id}/origin-test?origin=`, session)
    expect(await response.json()).toMatchObject({ origin: '', allowed: true, entry: '*' })
  })
})

describe('the origin check behind the form', () => {
  test('answers each entry with its canonical form or the reason it is refused', async () => {
    const service = await testService()
    const { session } = await memberOf(service)
    const response = await getPage(service, '/dashboard/api/check-origins?entry=Example.com&entry=https%3A%2F%2F', session)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({
      results: [
        { value: 'Example.com', ok: true, entry: 'example.com' },
        { value: 'https://', ok: false, reason: expect.stringContaining('is a protocol alone') },
      ],
    })
  })

  test('needs a session', async () => {
    const service = await testService()
    const response = await call(service, '/dashboard/api/check-origins?entry=example.com')
    expect(response.status).toBe(401)
  })
})

describe('pages', () => {
  test('carry a strict content security policy and refuse framing', async () => {
    const service = await testService()
    const response = await call(service, '/dashboard/sign-in')
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(response.headers.get('x-frame-options')).toBe('DENY')
  })

  test('label every input', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const { record } = await seedKey(service, businessId)
    const server = await seedKey(service, businessId, { type: 'private' })
    for (const path of [`${KEYS}/new`, `${KEYS}/${record.id}`, `${KEYS}/${record.id}/edit`, `${KEYS}/${server.record.id}/edit`]) {
      const page = await (await getPage(service, path, session)).text()
      const ids = [...page.matchAll(/<(?:input|textarea)(?![^>]*type="hidden")[^>]*\bid="([^"]+)"/g)].map((m) => m[1]!)
      expect(ids.length).toBeGreaterThan(0)
      for (const id of ids) expect(page).toContain(`<label for="${id}"`)
    }
  })
})
