import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import type { Service } from '../../src/app.ts'
import { hostileQueryValue, RUNS, storedRows } from '../support/hostile.ts'
import { call, seedBusiness, seedKey, testService } from '../support/service.ts'
import { addMember, cookieFrom, hiddenValue, KEYS, memberOf, postForm, type Session } from './support.ts'

/**
 * Hostile input at the dashboard's forms, query parameters and cookies: never a 5xx, and a
 * refused form (4xx) changes nothing stored. Values are sent percent-encoded byte by byte,
 * so forms carry U+0000, invalid UTF-8 and stray `%` as a hand-made request can.
 */

interface World {
  service: Service
  session: Session
  keyId: string
  privateKeyId: string
}

async function world(): Promise<World> {
  const service = await testService()
  const { businessId, session } = await memberOf(service)
  const key = await seedKey(service, businessId, { name: 'Web', allowedOrigins: ['example.com'] })
  const server = await seedKey(service, businessId, { name: 'Server', type: 'private' })
  return { service, session, keyId: key.record.id, privateKeyId: server.record.id }
}

async function survives(send: () => Promise<Response>): Promise<void> {
  const before = await storedRows()
  const response = await send()
  const text = await response.text()
  expect(response.status, text.slice(0, 500)).toBeLessThan(500)
  if (response.status >= 400) expect(await storedRows()).toBe(before)
}

function fuzz<T>(arbitrary: fc.Arbitrary<T>, send: (value: T) => Promise<Response>, numRuns = RUNS): Promise<void> {
  return fc.assert(
    fc.asyncProperty(arbitrary, (value) => survives(() => send(value))),
    { numRuns },
  )
}

/** Form fields: each either a plausible value or a hostile one, percent-encoded as sent. */
function formOf(fields: Record<string, string>): fc.Arbitrary<string> {
  const entries = Object.entries(fields).map(([name, plausible]) =>
    fc.oneof(fc.constant(encodeURIComponent(plausible)), hostileQueryValue).map((value) => `${name}=${value}`),
  )
  return fc.tuple(...entries).map((pairs) => pairs.join('&'))
}

function postRaw(w: World, path: string, body: string, cookie?: string): Promise<Response> {
  return call(w.service, path, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: 'http://localhost',
      'sec-fetch-site': 'same-origin',
      ...(cookie ? { cookie } : {}),
    },
  })
}

describe('hostile dashboard forms: never a 5xx, a refused form writes nothing', () => {
  test('sign-in', async () => {
    const w = await world()
    const page = await call(w.service, '/dashboard/sign-in')
    const csrf = hiddenValue(await page.text(), 'csrf')
    const cookie = cookieFrom(page, 'keygate_sign_in')!
    // A quarter of the runs: each that reaches the password check costs a deliberate ~300 ms.
    await fuzz(
      formOf({ csrf, email: 'ada@example.com', password: 'wrong password here', next: `${KEYS}/new` }),
      (body) => postRaw(w, '/dashboard/sign-in', body, cookie),
      Math.ceil(RUNS / 4),
    )
  })

  test('new key', async () => {
    const w = await world()
    const form = formOf({
      csrf: w.session.csrf,
      name: 'Site',
      description: 'd',
      origins: 'example.com',
      scopes: 'ANALYTICS_WRITE',
      expiresOn: '2099-01-31',
    })
    await fuzz(form, (body) => postRaw(w, `${KEYS}/new`, body, w.session.cookie))
  })

  test('edit key, public and private', async () => {
    const w = await world()
    const common = { csrf: w.session.csrf, name: 'Site', description: 'd', expiresOn: '' }
    const forms: [string, Record<string, string>][] = [
      [w.keyId, { ...common, origins: 'example.com', scopes: 'ANALYTICS_WRITE' }],
      // A private key's form has allowed IPs and IP report-only instead of origins.
      [w.privateKeyId, { ...common, allowedIps: '203.0.113.7\n198.51.100.0/24', ipReportOnly: 'on', scopes: 'MEMORY_READ' }],
    ]
    for (const [keyId, fields] of forms) await fuzz(formOf(fields), (body) => postRaw(w, `${KEYS}/${keyId}/edit`, body, w.session.cookie))
  })

  test("issue 10's forms: roll, allow an origin, remove a scope, add a member, remove one", async () => {
    const w = await world()
    const forms: [string, Record<string, string>][] = [
      [`${KEYS}/${w.keyId}/allow-origin`, { csrf: w.session.csrf, origin: 'https://shop.example.net' }],
      [`${KEYS}/${w.keyId}/remove-scope`, { csrf: w.session.csrf, scope: 'BLOG_READ' }],
      [`${KEYS}/${w.privateKeyId}/allow-ip`, { csrf: w.session.csrf, entry: '198.51.100.0/24' }],
      ['/dashboard/settings/members', { csrf: w.session.csrf, email: 'bo@example.com', role: 'member' }],
      [`/dashboard/settings/members/${crypto.randomUUID()}/remove`, { csrf: w.session.csrf }],
      [`/dashboard/settings/members/${crypto.randomUUID()}/link`, { csrf: w.session.csrf }],
      // Last: a valid roll replaces the key, and later rolls of it are 409s.
      [`${KEYS}/${w.keyId}/roll`, { csrf: w.session.csrf, graceSeconds: '3600' }],
    ]
    for (const [path, fields] of forms) await fuzz(formOf(fields), (body) => postRaw(w, path, body, w.session.cookie), Math.ceil(RUNS / 2))
  })

  test("join with one's own password from a member's sign-in link", async () => {
    const w = await world()
    await addMember(await seedBusiness(w.service, 'Other'), { email: 'rex@example.com' })
    const added = await postForm(
      w.service,
      '/dashboard/settings/members',
      { csrf: w.session.csrf, email: 'rex@example.com', role: 'member' },
      { cookie: w.session.cookie },
    )
    const token = new URL(
      /id="link-value" type="text" readonly value="([^"]+)"/.exec(await added.text())![1]!.replaceAll('&amp;', '&'),
    ).searchParams.get('token')!
    await fuzz(formOf({ token, password: 'not the password of rex' }), (body) => postRaw(w, '/dashboard/sign-in/link', body))
  })

  test('choose a password from a sign-in link', async () => {
    const w = await world()
    await fuzz(formOf({ token: 'x'.repeat(43), password: 'a long enough password', confirm: 'a long enough password' }), (body) =>
      postRaw(w, '/dashboard/sign-in/link', body),
    )
  })
})

describe('hostile dashboard query parameters and cookies: never a 5xx', () => {
  test('query parameters of every page', async () => {
    const w = await world()
    const pages = [
      '/dashboard/sign-in?next=',
      '/dashboard/sign-in/link?token=',
      `${KEYS}?revoked=`,
      `${KEYS}/${w.keyId}?origin=`,
      `${KEYS}/${w.keyId}/origin-test?origin=`,
      '/dashboard/api/check-origins?entry=',
      `${KEYS}/`,
      `${KEYS}?show=`,
      `${KEYS}/${w.keyId}?range=`,
      `${KEYS}/${w.keyId}?allowed=`,
      `${KEYS}/${w.keyId}?removed=`,
      `${KEYS}/${w.keyId}/audit?cursor=`,
      '/dashboard/settings/audit?cursor=',
      '/dashboard/settings/members?removed=',
    ]
    await fuzz(fc.tuple(fc.constantFrom(...pages), hostileQueryValue, fc.boolean()), ([page, value, signedIn]) =>
      call(w.service, `${page}${value}`, { headers: signedIn ? { cookie: w.session.cookie } : {} }),
    )
  })

  test('session cookie', async () => {
    const w = await world()
    const cookieValue = fc.string({
      unit: fc
        .integer({ min: 0x21, max: 0xff })
        .filter((c) => c !== 0x3b)
        .map((c) => String.fromCharCode(c)),
      maxLength: 100,
    })
    await fuzz(cookieValue, (value) => call(w.service, KEYS, { headers: { cookie: `keygate_session=${value}` } }))
  })
})
