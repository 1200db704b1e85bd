import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, flows } from '../../db/schema/index.ts'
import { hashKey } from '../../src/access/key-format.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedBusiness, seedKey, testService } from '../support/service.ts'

const ORIGIN = 'https://www.example.com'
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000'

async function lastUsedAt(service: Awaited<ReturnType<typeof testService>>, keyId: string): Promise<Date | null> {
  await service.services.lastUsed.flush()
  const { db } = await testDatabase()
  const [row] = await db.select({ at: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, keyId))
  return row!.at
}

// A use is a request answered 2xx; anything else writes nothing.
describe('lastUsedAt moves only for 2xx answers', () => {
  const refusedInHandler: { name: string; status: number; send: (s: Setup) => Promise<Response> }[] = [
    {
      name: 'an event timestamp outside the accepted range (400 from the handler)',
      status: 400,
      send: (s) =>
        call(s.service, '/api/v0/analytics', {
          method: 'POST',
          key: s.key,
          origin: ORIGIN,
          body: { eventType: 'x', timestamp: '1999-12-31T00:00:00Z' },
        }),
    },
    {
      name: 'an unknown list (404)',
      status: 404,
      send: (s) =>
        call(s.service, '/api/v0/audience/lists/nope/people', {
          method: 'POST',
          key: s.key,
          origin: ORIGIN,
          body: { people: [{ email: 'a@example.com' }] },
        }),
    },
    {
      name: 'an unknown flow (404)',
      status: 404,
      send: (s) => call(s.service, `/api/v0/flow/${UNKNOWN_ID}/trigger`, { method: 'POST', key: s.key, origin: ORIGIN, body: {} }),
    },
  ]

  type Setup = Awaited<ReturnType<typeof setup>>
  async function setup() {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const scopes = ['ANALYTICS_WRITE', 'AUDIENCE_LIST_WRITE', 'FLOW_TRIGGER']
    const { key, record } = await seedKey(service, businessId, { type: 'public', scopes })
    const { db } = await testDatabase()
    const [flow] = await db.insert(flows).values({ businessId, name: 'welcome' }).returning()
    return { service, key, keyId: record.id, flowId: flow!.id }
  }

  for (const refusal of refusedInHandler) {
    test(`${refusal.name} leaves lastUsedAt null`, async () => {
      const s = await setup()
      const response = await refusal.send(s)
      expect(response.status).toBe(refusal.status)
      expect(await lastUsedAt(s.service, s.keyId)).toBeNull()
    })
  }

  test('a 2xx answer sets it', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/analytics', {
      method: 'POST',
      key: s.key,
      origin: ORIGIN,
      body: { eventType: 'page_view' },
    })
    expect(response.status).toBe(202)
    expect(await lastUsedAt(s.service, s.keyId)).toBeInstanceOf(Date)
  })

  test('a reused Idempotency-Key with another body (422) leaves lastUsedAt null', async () => {
    const s = await setup()
    const { db } = await testDatabase()
    const headers = { 'idempotency-key': 'k-2' }
    const first = await call(s.service, `/api/v0/flow/${s.flowId}/trigger`, {
      method: 'POST',
      key: s.key,
      origin: ORIGIN,
      headers,
      body: { input: { n: 1 } },
    })
    expect(first.status).toBe(202)
    await s.service.services.lastUsed.flush()
    await db.update(apiKeys).set({ lastUsedAt: null }).where(eq(apiKeys.id, s.keyId))
    s.service.services.keyStore.invalidate(hashKey(s.key))
    // A fresh service instance: no in-memory memory of the earlier use.
    const fresh = await testService()
    const reused = await call(fresh, `/api/v0/flow/${s.flowId}/trigger`, {
      method: 'POST',
      key: s.key,
      origin: ORIGIN,
      headers,
      body: { input: { n: 2 } },
    })
    expect(reused.status).toBe(422)
    expect(await lastUsedAt(fresh, s.keyId)).toBeNull()
  })
})
