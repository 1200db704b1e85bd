import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, auditEntries } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, testService } from '../support/service.ts'

// Rolling a key through the admin API.
const ORIGIN = 'https://www.example.com'

interface KeyAnswer {
  id: string
  key: string
  name: string
  allowedOrigins: string[]
  scopes: string[]
  expiresAt: string | null
  rateLimit: { limit: number; windowSeconds: number } | null
  originPolicy: string
  rolledFrom: string | null
  replacedBy: string | null
  description: string | null
}

async function newKey(service: Service, businessId: string, extra: Record<string, unknown> = {}): Promise<KeyAnswer> {
  const response = await admin(service, `/businesses/${businessId}/keys`, {
    body: {
      type: 'public',
      name: 'Website',
      description: 'the shop',
      allowedOrigins: ['example.com'],
      scopes: ['ANALYTICS_WRITE'],
      rateLimit: { limit: 50, windowSeconds: 60 },
      originPolicy: 'report',
      createdBy: 'ops',
      ...extra,
    },
  })
  expect(response.status).toBe(201)
  return (await response.json()) as KeyAnswer
}

const roll = (service: Service, id: string, body: unknown = {}) => admin(service, `/keys/${id}/roll`, { body })
const whoami = (service: Service, key: string) => call(service, '/api/v0/whoami', { key, origin: ORIGIN })
const keyRows = async () => (await testDatabase()).db.select().from(apiKeys)

describe('POST /admin/v0/keys/:id/roll', () => {
  test('answers 201 with a new key holding the old one’s settings; the old one points to it and ends after the grace', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const old = await newKey(service, businessId)
    const before = Date.now()
    const response = await roll(service, old.id, { graceSeconds: 3600 })
    expect(response.status).toBe(201)
    const rolled = (await response.json()) as KeyAnswer
    expect(rolled.key).toMatch(/^pk_/)
    expect(rolled.key).not.toBe(old.key)
    expect(rolled.rolledFrom).toBe(old.id)
    expect(rolled.replacedBy).toBeNull()
    for (const field of ['name', 'description', 'allowedOrigins', 'scopes', 'rateLimit', 'originPolicy', 'expiresAt'] as const) {
      expect(rolled[field]).toEqual(old[field])
    }
    const oldNow = (await (await admin(service, `/keys/${old.id}`)).json()) as KeyAnswer
    expect(oldNow.replacedBy).toBe(rolled.id)
    const end = Date.parse(oldNow.expiresAt!)
    expect(end).toBeGreaterThanOrEqual(before + 3_600_000)
    expect(end).toBeLessThanOrEqual(Date.now() + 3_600_000)
    // Both work during the grace.
    expect((await whoami(service, old.key)).status).toBe(200)
    expect((await whoami(service, rolled.key)).status).toBe(200)
  })

  test('the old key works until the grace ends and is refused as expired right after', async () => {
    let offset = 0
    const service = await testService({ now: () => Date.now() + offset })
    const businessId = await seedBusiness(service)
    const old = await newKey(service, businessId)
    const rolled = (await (await roll(service, old.id, { graceSeconds: 60 })).json()) as KeyAnswer
    offset = 55_000
    expect((await whoami(service, old.key)).status).toBe(200)
    offset = 61_000
    const refused = await whoami(service, old.key)
    expect(refused.status).toBe(401)
    expect((await errorOf(refused)).code).toBe('expired_api_key')
    expect((await whoami(service, rolled.key)).status).toBe(200)
  })

  test('graceSeconds 0 ends the old key at once; the default grace is a day', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const first = await newKey(service, businessId)
    expect((await whoami(service, first.key)).status).toBe(200)
    const now = (await (await roll(service, first.id, { graceSeconds: 0 })).json()) as KeyAnswer
    const refused = await whoami(service, first.key)
    expect(refused.status).toBe(401)
    expect((await errorOf(refused)).code).toBe('expired_api_key')
    expect((await whoami(service, now.key)).status).toBe(200)

    const second = await newKey(service, businessId)
    const before = Date.now()
    expect((await roll(service, second.id)).status).toBe(201)
    const old = (await (await admin(service, `/keys/${second.id}`)).json()) as KeyAnswer
    expect(Date.parse(old.expiresAt!)).toBeGreaterThanOrEqual(before + 86_400_000)
    expect(Date.parse(old.expiresAt!)).toBeLessThanOrEqual(Date.now() + 86_400_000)
  })

  test('a key that expires before the grace ends keeps its own expiry', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString()
    const old = await newKey(service, businessId, { expiresAt })
    const rolled = (await (await roll(service, old.id, { graceSeconds: 604_800 })).json()) as KeyAnswer
    const oldNow = (await (await admin(service, `/keys/${old.id}`)).json()) as KeyAnswer
    expect(Date.parse(oldNow.expiresAt!)).toBe(Date.parse(expiresAt))
    expect(rolled.expiresAt).toBe(oldNow.expiresAt)
  })

  test('a revoked, an expired or an already replaced key answers 409 and nothing is written', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const revoked = await newKey(service, businessId)
    expect((await admin(service, `/keys/${revoked.id}`, { method: 'DELETE' })).status).toBe(204)
    const replaced = await newKey(service, businessId)
    expect((await roll(service, replaced.id)).status).toBe(201)
    const expired = await newKey(service, businessId, { expiresAt: new Date(Date.now() + 60_000).toISOString() })
    const { db } = await testDatabase()
    // Expired since a second ago: a key cannot be created already expired.
    await db
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 1_000) })
      .where(eq(apiKeys.id, expired.id))
    const keysBefore = (await keyRows()).length
    const entriesBefore = (await db.select().from(auditEntries)).length
    for (const [what, id] of [
      ['revoked', revoked.id],
      ['replaced', replaced.id],
      ['expired', expired.id],
    ] as const) {
      const response = await roll(service, id)
      expect({ what, status: response.status }).toEqual({ what, status: 409 })
      expect((await errorOf(response)).code).toBe('conflict')
    }
    expect((await keyRows()).length).toBe(keysBefore)
    expect((await db.select().from(auditEntries)).length).toBe(entriesBefore)
  })

  test('a bad grace is a 400 naming graceSeconds; an unknown key a 404; neither writes', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const old = await newKey(service, businessId)
    for (const graceSeconds of [-1, 604_801, 1.5, 'an hour', null, true]) {
      const response = await roll(service, old.id, { graceSeconds })
      expect({ graceSeconds, status: response.status }).toEqual({ graceSeconds, status: 400 })
      expect((await errorOf(response)).message).toContain('graceSeconds')
    }
    expect((await roll(service, crypto.randomUUID())).status).toBe(404)
    const [row] = await (await testDatabase()).db.select().from(apiKeys).where(eq(apiKeys.id, old.id))
    expect(row!.replacedBy).toBeNull()
    expect((await keyRows()).length).toBe(1)
  })
})
