import { expect } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accounts, members } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { createMemberService, type MemberRole } from '../../src/members/service.ts'
import { TEST_AUTHOR, TEST_PASSWORD_COST, call, seedBusiness } from '../support/service.ts'
import { argon2idPasswords } from '../../src/members/passwords.ts'
import { testDatabase } from '../support/database.ts'

export const KEYS = '/dashboard/settings/developers/api-keys'
export const PASSWORD = 'correct horse battery staple'

export interface Session {
  cookie: string
  csrf: string
}

/**
 * A member with PASSWORD, or with none (`password: null`: a new account waits for its link;
 * a person who already has an account keeps theirs and, unless `pending`, joins with it
 * through the link made for the membership, as they would in the dashboard).
 */
export async function addMember(
  businessId: string,
  options: { email?: string; password?: string | null; role?: MemberRole; pending?: boolean } = {},
) {
  const members = createMemberService((await testDatabase()).db, argon2idPasswords(TEST_PASSWORD_COST))
  const password = options.password === null ? undefined : (options.password ?? PASSWORD)
  const created = await members.create(
    businessId,
    { email: options.email ?? 'ada@example.com', ...(password === undefined ? {} : { password }), role: options.role ?? 'owner' },
    TEST_AUTHOR,
    'member',
  )
  if (created.member.passwordSet && created.member.pending && !options.pending) {
    const joined = await members.acceptLink(created.signInLink!.token, PASSWORD)
    if (typeof joined === 'string') throw new Error(`the membership was not joined: ${joined}`)
    return { ...created.member, pending: false }
  }
  return created.member
}

/** The `name=value` of a Set-Cookie header of `response` for cookie `name`, or null. */
export function cookieFrom(response: Response, name: string): string | null {
  for (const header of response.headers.getSetCookie()) {
    const [pair] = header.split(';')
    if (pair!.startsWith(`${name}=`)) return pair!
  }
  return null
}

export function setCookieHeader(response: Response, name: string): string | undefined {
  return response.headers.getSetCookie().find((h) => h.startsWith(`${name}=`))
}

export function hiddenValue(page: string, name: string): string {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(page)
  if (!match) throw new Error(`no hidden field ${name} in the page`)
  return match[1]!
}

/** A form POST as a browser on this dashboard sends it (same Origin). */
export function postForm(
  service: Service,
  path: string,
  fields: Record<string, string | string[]>,
  options: { cookie?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const body = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) {
    for (const v of Array.isArray(value) ? value : [value]) body.append(name, v)
  }
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    origin: 'http://localhost',
    'sec-fetch-site': 'same-origin',
    ...(options.cookie ? { cookie: options.cookie } : {}),
    ...options.headers,
  }
  // An empty value in `options.headers` means: the browser sent no such header.
  for (const name of Object.keys(headers)) if (headers[name] === '') delete headers[name]
  return call(service, path, { method: 'POST', body: body.toString(), headers })
}

/** A GET as a browser sends it: a redirect's `#fragment` stays in the browser, never in the request. */
export function getPage(service: Service, path: string, session?: Session | { cookie: string }, headers: Record<string, string> = {}) {
  return call(service, path.replace(/#.*$/, ''), { headers: { ...(session ? { cookie: session.cookie } : {}), ...headers } })
}

/** The sign-in form's token and cookie, as a browser gets them. */
export async function signInForm(service: Service): Promise<{ cookie: string; csrf: string }> {
  const response = await call(service, '/dashboard/sign-in')
  expect(response.status).toBe(200)
  return { cookie: cookieFrom(response, 'keygate_sign_in')!, csrf: hiddenValue(await response.text(), 'csrf') }
}

export async function trySignIn(
  service: Service,
  email: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const form = await signInForm(service)
  return postForm(service, '/dashboard/sign-in', { csrf: form.csrf, email, password }, { cookie: form.cookie, headers })
}

/** Signs in and reads the session's CSRF token from the key list. */
export async function signIn(service: Service, email = 'ada@example.com', password = PASSWORD): Promise<Session> {
  const response = await trySignIn(service, email, password)
  expect(response.status).toBe(303)
  const cookie = cookieFrom(response, 'keygate_session')
  if (!cookie) throw new Error('sign-in set no session cookie')
  const list = await getPage(service, KEYS, { cookie })
  expect(list.status).toBe(200)
  return { cookie, csrf: hiddenValue(await list.text(), 'csrf') }
}

export async function memberOf(service: Service, name = 'Acme', email = 'ada@example.com') {
  const businessId = await seedBusiness(service, name)
  await addMember(businessId, { email })
  return { businessId, session: await signIn(service, email) }
}

/** Every stored membership with its account's email and password hash, as tests compare them. */
export async function memberRows() {
  return (await testDatabase()).db
    .select({
      id: members.id,
      businessId: members.businessId,
      accountId: members.accountId,
      role: members.role,
      email: accounts.email,
      passwordHash: accounts.passwordHash,
    })
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .orderBy(members.createdAt, members.id)
}
