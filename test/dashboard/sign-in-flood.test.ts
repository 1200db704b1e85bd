import { afterEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { signInFailures } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { behindTrustedProxy, seedBusiness, testService } from '../support/service.ts'
import { floodSignIns, heldPasswords, signInForm, signInFrom } from '../support/sign-in-flood.ts'
import { testDatabase } from '../support/database.ts'
import { waitUntil } from '../support/wait.ts'
import { addMember, PASSWORD } from './support.ts'

// Sign-in throttling holds under concurrent attempts, counted before
// any transaction or lock, so a flood answers 429, never 503; and a guesser at one address
// never locks the owner out at another. Through a listening server, on both engines.
const listening: Service[] = []

afterEach(async () => {
  for (const service of listening.splice(0)) await service.app.stop(true)
})

describe('a flood of sign-ins through a listening server', () => {
  test('120 at once for one email from one address: only 401 or 429, at most 5 password checks; the owner signs in from another address', async () => {
    const service = await testService({ clientAddress: behindTrustedProxy })
    await addMember(await seedBusiness(service))
    service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
    listening.push(service)
    const base = `http://127.0.0.1:${service.app.server!.port}`

    const counts = await floodSignIns(base, { email: 'ada@example.com', address: '203.0.113.66', attempts: 120 })
    expect(Object.keys(counts).map(Number).sort()).toEqual(counts[401] ? [401, 429] : [429])
    expect(counts[401] ?? 0).toBeLessThanOrEqual(5)
    expect((counts[401] ?? 0) + (counts[429] ?? 0)).toBe(120)

    const form = await signInForm(base)
    expect(await signInFrom(base, form, 'ada@example.com', PASSWORD, '198.51.100.20')).toBe(303)
    console.log(`  120 sign-ins at once: ${JSON.stringify(counts)}; the owner from another address: 303`)
  })
})

// docs/decisions.md, "Sign-in under a flood from many addresses": the password checks a
// flood can start are bounded, an unknown email costs no hash, and a person with no
// failures is checked before the flood's suspects. The checks are held by the test's
// hasher, so what runs when is seen, not timed.
describe('a flood of sign-ins from many addresses, the password checks held', () => {
  async function heldService() {
    const held = heldPasswords()
    const service = await testService({ clientAddress: behindTrustedProxy, passwords: held.passwords })
    service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
    listening.push(service)
    return { held, service, base: `http://127.0.0.1:${service.app.server!.port}` }
  }

  async function reservations(email: string): Promise<number> {
    const { db } = await testDatabase()
    return (await db.select({ id: signInFailures.id }).from(signInFailures).where(eq(signInFailures.email, email))).length
  }

  test('unknown emails from 40 addresses hash nothing once a check was measured; at most 4 checks run at once', async () => {
    const { held, service, base } = await heldService()
    await addMember(await seedBusiness(service))
    const form = await signInForm(base)
    // The first unknown email pays one real check: the decoys learn what a check takes.
    expect(await signInFrom(base, form, 'nobody@example.com', 'first unknown', '192.0.2.1')).toBe(401)
    expect(held.checked).toEqual(['first unknown'])

    held.hold()
    const known = Array.from({ length: 12 }, (_, i) =>
      signInFrom(base, form, 'ada@example.com', `not the password ${i}`, `203.0.113.${i + 1}`),
    )
    const unknown = await Promise.all(
      Array.from({ length: 40 }, (_, i) => signInFrom(base, form, `visitor${i}@example.net`, `unknown ${i}`, `198.18.${i}.1`)),
    )
    // Answered while the known email's checks are still held: no unknown email waited for them.
    expect(unknown).toEqual(Array(40).fill(401))
    expect(held.checked.filter((password) => password.startsWith('unknown'))).toEqual([])
    await waitUntil(() => held.held() === 4, 'four checks held')
    held.letAll()
    const statuses = await Promise.all(known)
    expect(statuses.every((status) => status === 401 || status === 429)).toBe(true)
    expect(held.most).toBeLessThanOrEqual(4)
  })

  test("another owner's sign-in from her own address is checked before the flood's waiting attempts", async () => {
    const { held, service, base } = await heldService()
    await addMember(await seedBusiness(service))
    await addMember(await seedBusiness(service, 'Other'), { email: 'grace@example.com' })
    const form = await signInForm(base)
    held.hold()
    // One attempt at a time reaches the throttle: each after the last one's failure is counted.
    const flood: Promise<number>[] = []
    for (let i = 1; i <= 12; i++) {
      flood.push(signInFrom(base, form, 'ada@example.com', `not the password ${i}`, `203.0.113.${i}`))
      await waitUntil(async () => (await reservations('ada@example.com')) === i, `attempt ${i} counted`)
    }
    // Four checks run and eight suspect attempts wait: the next suspect one is refused at once.
    await waitUntil(() => held.held() === 4, 'four checks held')
    expect(await signInFrom(base, form, 'ada@example.com', 'not the password 13', '203.0.113.13')).toBe(429)

    const owner = signInFrom(base, form, 'grace@example.com', PASSWORD, '198.51.100.20')
    await waitUntil(async () => (await reservations('grace@example.com')) === 1, "the owner's attempt counted")
    // A slot frees up: it goes to the owner, not to any of the eight waiting before her.
    held.letOne()
    await waitUntil(() => held.checked.length === 5, 'a fifth check')
    expect(held.checked[4]).toBe(PASSWORD)
    held.letAll()
    expect(await owner).toBe(303)
    expect(await Promise.all(flood)).toEqual(Array(12).fill(401))
  })
})
