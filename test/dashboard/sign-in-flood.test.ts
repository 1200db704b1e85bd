import { afterEach, describe, expect, test } from 'bun:test'
import type { Service } from '../../src/app.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { behindTrustedProxy, seedBusiness, testService } from '../support/service.ts'
import { floodSignIns, signInForm, signInFrom } from '../support/sign-in-flood.ts'
import { addMember, PASSWORD } from './support.ts'

// Contract section 8: sign-in throttling holds under concurrent attempts, counted before
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
