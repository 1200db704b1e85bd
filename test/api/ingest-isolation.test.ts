import { afterEach, describe, expect, test } from 'bun:test'
import { count, eq, sql } from 'drizzle-orm'
import { analyticsEvents } from '../../db/schema/index.ts'
import { testEventsDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

/**
 * A row the database refuses although it passed validation (the test installs a trigger
 * that raises for event type "poison"): the group commit must fail that request alone.
 */
describe('failure isolation in the group commit', () => {
  afterEach(async () => {
    const { db } = await testEventsDatabase()
    await db.execute(sql`drop trigger if exists poison_events on analytics_events`)
    await db.execute(sql`drop function if exists poison_events()`)
  })

  test("a poisoned request fails alone while another business's concurrent requests all answer 202 and are stored", async () => {
    const { db } = await testEventsDatabase()
    await db.execute(sql`
      create function poison_events() returns trigger language plpgsql as $$
      begin raise exception 'poisoned row'; end $$`)
    await db.execute(sql`
      create trigger poison_events before insert on analytics_events
      for each row when (new.event_type = 'poison') execute function poison_events()`)

    const service = await testService()
    const attacker = await seedKey(service, await seedBusiness(service, 'Attacker'), { type: 'public' })
    const shop = await seedKey(service, await seedBusiness(service, 'Shop'), { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const post = (key: string, body: unknown, origin?: string) => call(service, '/api/v0/analytics', { method: 'POST', key, origin, body })

    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 4 === 0
          ? post(attacker.key, { events: [{ eventType: 'page_view' }, { eventType: 'poison' }] }, 'https://www.example.com')
          : post(shop.key, { events: [{ eventType: 'order', properties: { n: i } }, { eventType: 'page_view' }] }),
      ),
    )
    const poisoned = answers.filter((_, i) => i % 4 === 0)
    const fine = answers.filter((_, i) => i % 4 !== 0)
    expect(fine.map((a) => a.status)).toEqual(Array(30).fill(202))
    for (const answer of poisoned) {
      expect(answer.status).toBe(500)
      expect((await errorOf(answer)).code).toBe('internal_error')
    }
    const stored = async (keyId: string) =>
      (await db.select({ n: count() }).from(analyticsEvents).where(eq(analyticsEvents.keyId, keyId)))[0]!.n
    expect(await stored(shop.record.id)).toBe(60)
    // The poisoned requests' good rows went down with them: a request is all or nothing.
    expect(await stored(attacker.record.id)).toBe(0)
  })
})

describe('bounded ingestion', () => {
  test('a full queue answers 503 with Retry-After at once and writes nothing of that request', async () => {
    const service = await testService({ ingestQueueRows: 1 })
    const { key, record } = await seedKey(service, await seedBusiness(service), { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => call(service, '/api/v0/analytics', { method: 'POST', key, body: { eventType: 'page_view' } })),
    )
    const refused = answers.filter((a) => a.status === 503)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0]!.headers.get('retry-after')).toBe('1')
    expect((await errorOf(refused[0]!)).code).toBe('unavailable')
    const accepted = answers.filter((a) => a.status === 202).length
    expect(accepted + refused.length).toBe(6)
    const { db } = await testEventsDatabase()
    const [stored] = await db.select({ n: count() }).from(analyticsEvents).where(eq(analyticsEvents.keyId, record.id))
    expect(stored!.n).toBe(accepted)
  })
})
