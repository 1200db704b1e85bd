import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, postForm } from './support.ts'

/** Business B's key, and a signed-in member of business A. */
async function twoBusinesses() {
  const service = await testService()
  const b = await memberOf(service, 'Bravo', 'bea@example.com')
  const { record, key } = await seedKey(service, b.businessId, { name: 'Bravo site', allowedOrigins: ['bravo.com'] })
  const a = await memberOf(service, 'Alpha', 'al@example.com')
  return { service, a, b, keyId: record.id, key }
}

async function storedKey(id: string) {
  const [row] = await (await testDatabase()).db.select().from(apiKeys).where(eq(apiKeys.id, id))
  return row!
}

describe("another business's keys", () => {
  test('are not in the list', async () => {
    const { service, a, key } = await twoBusinesses()
    const page = await (await getPage(service, KEYS, a.session)).text()
    expect(page).not.toContain('Bravo site')
    expect(page).not.toContain(key)
    expect(page).toContain('No keys yet')
  })

  for (const path of ['', '/edit', '/revoke', '/roll', '/audit', '?origin=https%3A%2F%2Fbravo.com', '?range=7d']) {
    test(`answer 404 on GET ${KEYS}/:id${path}`, async () => {
      const { service, a, key, keyId } = await twoBusinesses()
      const response = await getPage(service, `${KEYS}/${keyId}${path}`, a.session)
      expect(response.status).toBe(404)
      const text = await response.text()
      expect(text).toContain('Alpha has no such key')
      expect(text).not.toContain(key)
      expect(text).not.toContain('Bravo site')
    })
  }

  for (const path of ['/origin-test?origin=https://bravo.com', '/first-request']) {
    test(`answer 404 on the JSON endpoint ${path}`, async () => {
      const { service, a, keyId } = await twoBusinesses()
      const response = await getPage(service, `${KEYS}/${keyId}${path}`, a.session)
      expect(response.status).toBe(404)
      expect(await response.json()).toMatchObject({ error: { code: 'not_found' } })
    })
  }

  test('answer 404 to a roll, an allow and a scope removal, and stay unchanged', async () => {
    const { service, a, keyId } = await twoBusinesses()
    for (const [action, fields] of [
      ['roll', { graceSeconds: '0' }],
      ['allow-origin', { origin: 'https://evil.example.org' }],
      ['allow-ip', { entry: '198.51.100.0/24' }],
      ['remove-scope', { scope: 'ANALYTICS_WRITE' }],
    ] as const) {
      const response = await postForm(
        service,
        `${KEYS}/${keyId}/${action}`,
        { csrf: a.session.csrf, ...fields },
        { cookie: a.session.cookie },
      )
      expect({ action, status: response.status }).toEqual({ action, status: 404 })
    }
    expect(await storedKey(keyId)).toMatchObject({ replacedBy: null, allowedOrigins: ['bravo.com'], scopes: ['ANALYTICS_WRITE'] })
  })

  test('answer 404 to an edit and stay unchanged', async () => {
    const { service, a, keyId } = await twoBusinesses()
    const response = await postForm(
      service,
      `${KEYS}/${keyId}/edit`,
      { csrf: a.session.csrf, name: 'Hijacked', origins: 'evil.com', scopes: 'ANALYTICS_WRITE' },
      { cookie: a.session.cookie },
    )
    expect(response.status).toBe(404)
    expect(await storedKey(keyId)).toMatchObject({ name: 'Bravo site', allowedOrigins: ['bravo.com'] })
  })

  test("answer 404 to a private key's edit, and stay unchanged", async () => {
    const { service, a, b } = await twoBusinesses()
    const server = await seedKey(service, b.businessId, { type: 'private', name: 'Bravo server' })
    const response = await postForm(
      service,
      `${KEYS}/${server.record.id}/edit`,
      { csrf: a.session.csrf, name: 'Hijacked', scopes: 'MEMORY_READ', allowedIps: '0.0.0.0/0' },
      { cookie: a.session.cookie },
    )
    expect(response.status).toBe(404)
    expect(await storedKey(server.record.id)).toMatchObject({ name: 'Bravo server', scopes: ['ANALYTICS_READ'], allowedIps: [] })
  })

  test('answer 404 to a revoke and stay usable', async () => {
    const { service, a, keyId, key } = await twoBusinesses()
    const response = await postForm(service, `${KEYS}/${keyId}/revoke`, { csrf: a.session.csrf }, { cookie: a.session.cookie })
    expect(response.status).toBe(404)
    expect((await storedKey(keyId)).revokedAt).toBeNull()
    expect((await call(service, '/api/v0/whoami', { key, origin: 'https://bravo.com' })).status).toBe(200)
  })

  test('stay visible to their own business', async () => {
    const { service, b, keyId } = await twoBusinesses()
    const response = await getPage(service, `${KEYS}/${keyId}`, b.session)
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('Bravo site')
  })
})
