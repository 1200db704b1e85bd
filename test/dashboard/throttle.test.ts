import { describe, expect, test } from 'bun:test'
import { signInFailures } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { behindTrustedProxy, seedBusiness, testService } from '../support/service.ts'
import { addMember, cookieFrom, PASSWORD, trySignIn } from './support.ts'

const WRONG = 'definitely not the password'

async function failures(count: number, email: string, address: string) {
  const service = await testService({ clientAddress: behindTrustedProxy })
  for (let i = 0; i < count; i++) {
    const response = await trySignIn(service, email, WRONG, { 'x-forwarded-for': address })
    expect(response.status).toBe(401)
  }
  return service
}

describe('throttling failed sign-ins', () => {
  test('after 5 failures for an email, even the right password is refused with 429 and Retry-After', async () => {
    const businessId = await seedBusiness(await testService({ clientAddress: behindTrustedProxy }))
    await addMember(businessId)
    const service = await failures(5, 'ada@example.com', '203.0.113.1')
    const response = await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '203.0.113.2' })
    expect(response.status).toBe(429)
    const retryAfter = Number(response.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(14 * 60)
    expect(retryAfter).toBeLessThanOrEqual(15 * 60)
    expect(await response.text()).toContain('Too many failed sign-ins for this email. Wait 15 minutes')
    expect(cookieFrom(response, 'keygate_session')).toBeNull()
  })

  test('four failures still let the right password in, and success forgives them', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await failures(4, 'ada@example.com', '203.0.113.1')
    expect((await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(303)
    const left = await (await testDatabase()).db.select().from(signInFailures)
    expect(left.filter((f) => f.email === 'ada@example.com')).toHaveLength(0)
  })

  test('after 20 failures from one address, other emails from it are refused too, but not from elsewhere', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await testService({ clientAddress: behindTrustedProxy })
    for (let i = 0; i < 20; i++) {
      expect((await trySignIn(service, `guess${i}@example.com`, WRONG, { 'x-forwarded-for': '198.51.100.7' })).status).toBe(401)
    }
    const refused = await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '198.51.100.7' })
    expect(refused.status).toBe(429)
    expect(await refused.text()).toContain('Too many failed sign-ins from your network')
    expect((await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '198.51.100.8' })).status).toBe(303)
  })

  test('failures older than 15 minutes no longer count', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await testService({ clientAddress: behindTrustedProxy })
    const old = new Date(Date.now() - 16 * 60 * 1000)
    await (await testDatabase()).db
      .insert(signInFailures)
      .values(Array.from({ length: 5 }, () => ({ email: 'ada@example.com', ip: '203.0.113.1', failedAt: old })))
    expect((await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(303)
  })

  test('unknown emails are counted like known ones', async () => {
    const service = await failures(5, 'nobody@example.com', '203.0.113.1')
    const response = await trySignIn(service, 'nobody@example.com', WRONG, { 'x-forwarded-for': '203.0.113.9' })
    expect(response.status).toBe(429)
  })
})

describe('the throttle under concurrent guesses', () => {
  test('40 concurrent wrong passwords for one email: at most 5 reach the password check, the rest are 429', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await testService({ clientAddress: behindTrustedProxy })
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        trySignIn(service, 'ada@example.com', `${WRONG} ${i}`, { 'x-forwarded-for': `203.0.113.${i + 1}` }),
      ),
    )
    const statuses = answers.map((a) => a.status)
    // 401 is an attempt whose password was checked; each holds one counted row.
    expect(statuses.filter((s) => s === 401)).toHaveLength(5)
    expect(statuses.filter((s) => s === 429)).toHaveLength(35)
    const counted = await (await testDatabase()).db.select().from(signInFailures)
    expect(counted).toHaveLength(5)
  })
})
