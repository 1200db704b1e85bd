import { describe, expect, test } from 'bun:test'
import { signInFailures } from '../../db/schema/index.ts'
import { DEFAULT_SIGN_IN_LIMITS } from '../../src/dashboard/throttle.ts'
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
  test('after 5 failures for an email from one address, that address is refused for it even with the right password; the owner elsewhere signs in', async () => {
    const businessId = await seedBusiness(await testService({ clientAddress: behindTrustedProxy }))
    await addMember(businessId)
    const service = await failures(5, 'ada@example.com', '203.0.113.1')
    const response = await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '203.0.113.1' })
    expect(response.status).toBe(429)
    const retryAfter = Number(response.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(14 * 60)
    expect(retryAfter).toBeLessThanOrEqual(15 * 60)
    expect(await response.text()).toContain('Too many failed sign-ins for this email from your network. Wait 15 minutes')
    expect(cookieFrom(response, 'keygate_session')).toBeNull()
    // A guesser at one address never locks the owner out at another.
    const owner = await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '198.51.100.20' })
    expect(owner.status).toBe(303)
    // And the owner's success forgives nothing the guesser spent.
    expect((await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(429)
  })

  test('once an email has its limit of failures from all addresses together, it is refused from every address', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    // The defaults are 5 per email and address and 30 per email: six addresses. Lower here, for the hashing's sake.
    const service = await testService({
      clientAddress: behindTrustedProxy,
      signInLimits: { ...DEFAULT_SIGN_IN_LIMITS, perEmailAndAddress: 2, perEmail: 6 },
    })
    for (let address = 1; address <= 3; address++) {
      for (let i = 0; i < 2; i++) {
        const response = await trySignIn(service, 'ada@example.com', WRONG, { 'x-forwarded-for': `203.0.113.${address}` })
        expect(response.status).toBe(401)
      }
    }
    const refused = await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '198.51.100.20' })
    expect(refused.status).toBe(429)
    expect(await refused.text()).toContain('Too many failed sign-ins for this email. Wait 15 minutes')
  })

  test('IPv6 addresses of one /64 count as one address', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await testService({ clientAddress: behindTrustedProxy })
    for (let i = 1; i <= 5; i++) {
      expect((await trySignIn(service, 'ada@example.com', WRONG, { 'x-forwarded-for': `2001:db8:1:2::${i}` })).status).toBe(401)
    }
    expect((await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '2001:db8:1:2::99' })).status).toBe(429)
    expect((await trySignIn(service, 'ada@example.com', PASSWORD, { 'x-forwarded-for': '2001:db8:1:3::1' })).status).toBe(303)
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
    const response = await trySignIn(service, 'nobody@example.com', WRONG, { 'x-forwarded-for': '203.0.113.1' })
    expect(response.status).toBe(429)
  })
})

describe('the throttle under concurrent guesses', () => {
  test('40 concurrent wrong passwords for one email from 40 addresses: at most its limit reach the password check, the rest are 429', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await testService({ clientAddress: behindTrustedProxy, signInLimits: { ...DEFAULT_SIGN_IN_LIMITS, perEmail: 8 } })
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        trySignIn(service, 'ada@example.com', `${WRONG} ${i}`, { 'x-forwarded-for': `203.0.113.${i + 1}` }),
      ),
    )
    const statuses = answers.map((a) => a.status)
    // 401 is an attempt whose password was checked; each holds one counted row.
    const checked = statuses.filter((s) => s === 401).length
    expect(checked).toBeLessThanOrEqual(8)
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - checked)
    const counted = await (await testDatabase()).db.select().from(signInFailures)
    expect(counted).toHaveLength(checked)
  })

  test('40 concurrent wrong passwords for one email from one address: at most 5 reach the password check', async () => {
    await addMember(await seedBusiness(await testService({ clientAddress: behindTrustedProxy })))
    const service = await testService({ clientAddress: behindTrustedProxy })
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => trySignIn(service, 'ada@example.com', `${WRONG} ${i}`, { 'x-forwarded-for': '203.0.113.1' })),
    )
    const statuses = answers.map((a) => a.status)
    const checked = statuses.filter((s) => s === 401).length
    expect(checked).toBeLessThanOrEqual(5)
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - checked)
    expect(await (await testDatabase()).db.select().from(signInFailures)).toHaveLength(checked)
  })
})
