import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createClient, type DeliveryFailure } from '../../clients/node/src/index.ts'
import { people } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey, TEST_AUTHOR } from '../support/service.ts'
import { ENGINE, listeningService, storedEvents } from './support.ts'

// Bad input through the client, against the real service over HTTP: the documented error
// as a typed value, and nothing written that should not be.

async function setup(scopes: string[]) {
  const running = await listeningService()
  const businessId = await seedBusiness(running.service, 'Backend client')
  const { key, record } = await seedKey(running.service, businessId, { type: 'private', scopes })
  const failures: DeliveryFailure[] = []
  const client = createClient({ key, baseUrl: running.base, onError: (failure) => failures.push(failure) })
  return { ...running, businessId, keyId: record.id, client, failures }
}

describe(`bad input gives the documented errors (${ENGINE})`, () => {
  test('an invalid event among valid ones: track() drops that event alone, and the 400 names it', async () => {
    const { client, failures, businessId, stop } = await setup(['ANALYTICS_WRITE'])
    const tomorrowAndMore = new Date(Date.now() + 48 * 3600_000).toISOString()
    const ids = [
      client.track({ eventType: 'signup' }),
      client.track({ eventType: 'order paid' }), // a space: not in [A-Za-z0-9_.:-]
      client.track({ eventType: 'order_paid' }),
      client.track({ eventType: 'refund', timestamp: tomorrowAndMore }), // over 24 h ahead
      client.track({ eventType: 'logout' }),
    ]
    await client.flush()
    await stop()

    expect(failures.map((f) => [f.reason, f.events.map((e) => e.id), f.error?.code, f.error?.status])).toEqual([
      ['refused', [ids[1]!], 'invalid_request', 400],
      ['refused', [ids[3]!], 'invalid_request', 400],
    ])
    expect(failures[0]!.error!.message).toStartWith('Invalid body field "events[1].eventType": ')
    // The client found each event by the error's field, which the service sent.
    expect(failures.map((f) => f.error!.field)).toEqual(['events[1].eventType', 'events[2].timestamp'])
    // The second refusal came from the batch resent without the first.
    expect(failures[1]!.error!.message).toStartWith('Invalid body field "events[2].timestamp": ')
    expect(failures[1]!.error!.requestId).toMatch(/^req_/)
    const stored = await storedEvents(businessId)
    expect([...stored.ids].sort()).toEqual([ids[0]!, ids[2]!, ids[4]!].sort())
    expect(client.stats()).toEqual({ queued: 0, committed: 3, dropped: 2 })
  })

  test('sendEvents() with an invalid event is refused whole: 400 naming the field, nothing stored', async () => {
    const { client, businessId, stop } = await setup(['ANALYTICS_WRITE'])
    const result = await client.sendEvents({ events: [{ eventType: 'ok' }, { eventType: '' }] })
    await stop()
    expect(result.ok).toBe(false)
    expect(result.error).toMatchObject({ code: 'invalid_request', status: 400, retryable: false })
    expect(result.error!.message).toStartWith('Invalid body field "events[1].eventType": ')
    expect(result.error!.field).toBe('events[1].eventType')
    expect(result.error!.requestId).toBe(result.requestId!)
    expect((await storedEvents(businessId)).rows).toBe(0)
  })

  test('a revoked key: every call answers invalid_api_key, and track() reports its events instead of retrying them', async () => {
    const { client, failures, service, businessId, keyId, stop } = await setup(['ANALYTICS_WRITE'])
    expect((await client.whoami()).ok).toBe(true)
    await service.services.keys.revoke(businessId, keyId, TEST_AUTHOR)

    const refused = await client.whoami()
    expect(refused.ok).toBe(false)
    expect(refused.error).toMatchObject({ code: 'invalid_api_key', status: 401, retryable: false })
    expect(refused.error!.requestId).toBe(refused.headers!.get('x-request-id')!)
    const id = client.track({ eventType: 'after_revoke' })
    await client.flush()
    await stop()
    expect(failures.map((f) => [f.reason, f.error?.code, f.events.map((e) => e.id)])).toEqual([['refused', 'invalid_api_key', [id]]])
    expect((await storedEvents(businessId)).rows).toBe(0)
  })

  test('an unknown field in a body: 400 naming it, nothing written', async () => {
    const { client, businessId, stop } = await setup(['AUDIENCE_PERSON_WRITE'])
    // @ts-expect-error: the types refuse it too; a JavaScript caller can still send it.
    const result = await client.upsertPeople({ people: [{ email: 'ada@example.com', nickname: 'Ada' }] })
    await stop()
    expect(result.error).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(result.error!.message).toContain('people[0].nickname')
    const rows = await (await testDatabase()).db.select().from(people).where(eq(people.businessId, businessId))
    expect(rows).toEqual([])
  })

  test('a scope the key lacks: 403 insufficient_scope; an answer to a private key carries its RateLimit-* figures', async () => {
    const { client, stop } = await setup(['ANALYTICS_WRITE'])
    const refused = await client.listEvents({ limit: 10 })
    const me = await client.whoami()
    await stop()
    expect(refused.error).toMatchObject({ code: 'insufficient_scope', status: 403 })
    expect(me.ok && me.data.keyType).toBe('private')
    expect(me.rateLimit).toEqual({ limit: 6000, remaining: expect.any(Number), reset: expect.any(Number) })
    expect(me.rateLimit!.remaining).toBeLessThan(6000)
  })
})
