import { describe, expect, test } from 'bun:test'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedKey, testService } from '../support/service.ts'
import { addMember, getPage, KEYS, memberOf, postForm, signIn } from './support.ts'

// The `member` macro (src/dashboard/member.ts) and the dashboard's failures (src/dashboard/failures.ts).

async function keyWorld() {
  const service = await testService()
  const { businessId, session } = await memberOf(service)
  const key = await seedKey(service, businessId, { name: 'Storefront', allowedOrigins: ['example.com'] })
  return { service, businessId, session, keyId: key.record.id }
}

async function stored() {
  const { db } = await testDatabase()
  return { keys: await db.select().from(apiKeys), trail: (await db.select().from(auditEntries)).length }
}

describe("the pages' JSON helpers answer errors in the API's envelope", () => {
  const helpers = (keyId: string) => [
    `${KEYS}/${keyId}/first-request`,
    `${KEYS}/${keyId}/origin-test?origin=https://example.com`,
    '/dashboard/api/check-origins?entry=example.com',
  ]

  test("signed out: 401 unauthorized, its requestId the answer's X-Request-Id", async () => {
    const { service, keyId } = await keyWorld()
    for (const path of helpers(keyId)) {
      const response = await getPage(service, path)
      const requestId = response.headers.get('x-request-id')
      expect({ path, status: response.status, body: await response.json() }).toEqual({
        path,
        status: 401,
        body: { error: { code: 'unauthorized', message: 'Sign in to the dashboard first.', requestId } },
      })
      expect(requestId).toMatch(/^req_/)
    }
  })

  test("another business's key, and an id that is no UUID: 404 not_found with the answer's requestId", async () => {
    const { service, keyId } = await keyWorld()
    const { session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    for (const path of [`${KEYS}/${keyId}/first-request`, `${KEYS}/not-a-uuid/first-request`, `${KEYS}/${keyId}x/origin-test`]) {
      const response = await getPage(service, path, rival)
      expect({ path, status: response.status }).toEqual({ path, status: 404 })
      const { error } = (await response.json()) as { error: { code: string; requestId: string } }
      expect(error.code).toBe('not_found')
      expect(error.requestId).toBe(response.headers.get('x-request-id')!)
    }
  })

  test('a query the helper cannot take: 400 invalid_request in the envelope', async () => {
    const { service, session } = await keyWorld()
    const entries = Array.from({ length: 1001 }, (_, i) => `entry=e${i}.example.com`).join('&')
    const response = await getPage(service, `/dashboard/api/check-origins?${entries}`, session)
    expect(response.status).toBe(400)
    const { error } = (await response.json()) as { error: { code: string; requestId: string } }
    expect(error).toMatchObject({ code: 'invalid_request', requestId: response.headers.get('x-request-id')! })
  })
})

describe('pages: who is signed in is decided before the path is validated', () => {
  test('a visitor at a malformed key address is sent to sign in, and brought back', async () => {
    const { service } = await keyWorld()
    const response = await getPage(service, `${KEYS}/not-a-uuid/edit`)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`/dashboard/sign-in?next=${encodeURIComponent(`${KEYS}/not-a-uuid/edit`)}`)
  })

  test("a member at a malformed key address gets the business's 404 page, with the member's navigation", async () => {
    const { service, session } = await keyWorld()
    const response = await getPage(service, `${KEYS}/{${crypto.randomUUID()}}`, session)
    expect(response.status).toBe(404)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await response.text()
    expect(page).toContain('Acme has no such key')
    expect(page).toContain('ada@example.com · owner')
  })

  test('a form a browser cannot have sent (a field twice) is a 400 page and changes nothing', async () => {
    const { service, session, keyId } = await keyWorld()
    const before = await stored()
    const response = await postForm(
      service,
      `${KEYS}/${keyId}/edit`,
      { csrf: session.csrf, name: ['One', 'Two'], origins: 'example.com' },
      {
        cookie: session.cookie,
      },
    )
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('Nothing was changed: the form&#39;s field &quot;name&quot;')
    expect(await stored()).toEqual(before)
  })
})

describe('forms: the macro refuses before the handler runs', () => {
  test('a visitor posting a form is sent to sign in and nothing is written', async () => {
    const { service, keyId } = await keyWorld()
    const before = await stored()
    const response = await postForm(service, `${KEYS}/${keyId}/revoke`, { csrf: 'whatever' })
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe('/dashboard/sign-in')
    expect(await stored()).toEqual(before)
  })

  test('a member who is no owner may not add a member, even with a valid token', async () => {
    const { service, businessId } = await keyWorld()
    await addMember(businessId, { email: 'bo@example.com', role: 'member' })
    const bo = await signIn(service, 'bo@example.com')
    const response = await postForm(
      service,
      '/dashboard/settings/members',
      { csrf: bo.csrf, email: 'cy@example.com', role: 'owner' },
      { cookie: bo.cookie },
    )
    expect(response.status).toBe(403)
    expect(await response.text()).toContain('only owners of Acme may add members')
    const list = await (await getPage(service, '/dashboard/settings/members', bo)).text()
    expect(list).not.toContain('cy@example.com')
  })

  test('every answer of the dashboard carries X-Request-Id', async () => {
    const { service, session, keyId } = await keyWorld()
    for (const response of [
      await getPage(service, `${KEYS}/${keyId}`, session),
      await getPage(service, `${KEYS}/not-a-uuid`, session),
      await postForm(service, `${KEYS}/${keyId}/revoke`, {}, { cookie: session.cookie }),
      await call(service, '/dashboard/assets/dashboard.css'),
    ]) {
      expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    }
  })
})
