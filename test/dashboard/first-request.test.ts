import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf } from './support.ts'

// Issue 10 item 7: "waiting for the first request…" beside a new key's snippet.
const db = async () => (await testDatabase()).db

describe('the first-request panel', () => {
  test('a new public key waits; the JSON endpoint names a refused origin, then the time of the first accepted request', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId, { allowedOrigins: ['example.com'] })
    const page = await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()
    expect(page).toContain(`data-first-request="${KEYS}/${site.record.id}/first-request"`)
    expect(page).toContain('Waiting for the first request…')

    const state = async () => {
      const response = await getPage(service, `${KEYS}/${site.record.id}/first-request`, session)
      expect(response.status).toBe(200)
      return (await response.json()) as { receivedAt: string | null; refused: { origin: string; lastSeenAt: string } | null }
    }
    expect(await state()).toEqual({ receivedAt: null, refused: null })

    expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'http://localhost:5173' })).status).toBe(403)
    await service.services.usage.flush()
    expect(await state()).toEqual({ receivedAt: null, refused: { origin: 'http://localhost:5173', lastSeenAt: expect.any(String) } })

    expect((await call(service, '/api/v0/whoami', { key: site.key, origin: 'https://example.com' })).status).toBe(200)
    let answer = await state()
    for (let i = 0; i < 40 && answer.receivedAt === null; i++) {
      await Bun.sleep(50)
      answer = await state()
    }
    const [row] = await (await db()).select().from(apiKeys).where(eq(apiKeys.id, site.record.id))
    expect(answer).toEqual({ receivedAt: row!.lastUsedAt!.toISOString(), refused: null })
    // Once used, the page shows the last use in its details instead of the panel.
    expect(await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()).not.toContain('data-first-request')
  })

  test('signed out: 401 JSON; another business: 404', async () => {
    const service = await testService()
    const { businessId } = await memberOf(service)
    const site = await seedKey(service, businessId)
    const anonymous = await getPage(service, `${KEYS}/${site.record.id}/first-request`)
    expect(anonymous.status).toBe(401)
    expect(await anonymous.json()).toMatchObject({ error: { code: 'unauthorized' } })
    const { session: rival } = await memberOf(service, 'Rival', 'rex@rival.example')
    expect((await getPage(service, `${KEYS}/${site.record.id}/first-request`, rival)).status).toBe(404)
  })
})
