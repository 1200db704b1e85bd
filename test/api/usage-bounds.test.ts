import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { keyRefusedIps, keyRefusedOrigins, keyRefusedOthers } from '../../db/schema/index.ts'
import { createUsageRecorder, REFUSALS_KEPT_PER_HOUR } from '../../src/usage/recorder.ts'
import { testDatabase } from '../support/database.ts'
import { admin, seedBusiness, seedKey, testService } from '../support/service.ts'

// Contract sections 11 and 13: what usage keeps of refused origins and addresses is bounded
// per key and hour, in memory and in rows, whatever the flood and however many instances
// flush; the report still names the most frequent and counts the rest.
const HOUR = 3_600_000

interface Report {
  refusedOrigins: { origin: string; count: number }[]
  refusedOriginsOther: number
  refusedIps: { ip: string; count: number }[]
  refusedIpsOther: number
}

async function originRows(keyId: string) {
  return (await testDatabase()).db.select().from(keyRefusedOrigins).where(eq(keyRefusedOrigins.keyId, keyId))
}

describe('refused origins and addresses under a flood', () => {
  test('two instances flushing a flood of made-up origins at once keep at most 100 rows for the hour; the real one leads, nothing is lost from the total', async () => {
    const a = await testService()
    const b = await testService()
    const businessId = await seedBusiness(a)
    const site = await seedKey(a, businessId, { type: 'public' })
    const keyId = site.record.id
    const at = Date.now()
    let sent = 0
    for (const [index, service] of [a, b].entries()) {
      for (let i = 0; i < 300; i++, sent++) service.services.usage.origin(keyId, 'https://shop.example.org', false, at)
      for (let i = 0; i < 1_500; i++, sent++) service.services.usage.origin(keyId, `https://${index}-${i}.flood.example`, false, at)
    }
    await Promise.all([a.services.usage.flush(), b.services.usage.flush()])
    // A second wave, flushed the same way: the hour's rows stay within the bound.
    for (const [index, service] of [a, b].entries()) {
      for (let i = 0; i < 700; i++, sent++) service.services.usage.origin(keyId, `https://${index}-${i}.second.example`, false, at)
    }
    await Promise.all([a.services.usage.flush(), b.services.usage.flush()])

    const rows = await originRows(keyId)
    expect(rows.length).toBeLessThanOrEqual(REFUSALS_KEPT_PER_HOUR)
    expect(new Set(rows.map((r) => r.hour.getTime()))).toEqual(new Set([at - (at % HOUR)]))
    const report = (await (await admin(a, `/keys/${keyId}/usage`)).json()) as Report
    expect(report.refusedOrigins).toHaveLength(50)
    expect(report.refusedOrigins[0]).toMatchObject({ origin: 'https://shop.example.org', count: 600 })
    const named = report.refusedOrigins.reduce((sum, o) => sum + o.count, 0)
    expect(named + report.refusedOriginsOther).toBe(sent)
  })

  test('refused client addresses of a private key are bounded the same way, apart from origins', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const server = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const keyId = server.record.id
    const at = Date.now()
    // Named for certain: seen more than 1/100 of the flush's refusals (3,040 / 100).
    for (let i = 0; i < 40; i++) service.services.usage.ip(keyId, '198.51.100.7', false, at)
    for (let i = 0; i < 3_000; i++) service.services.usage.ip(keyId, `10.${i >> 8}.${i & 255}.1`, false, at)
    await service.services.usage.flush()
    const { db } = await testDatabase()
    const rows = await db.select().from(keyRefusedIps).where(eq(keyRefusedIps.keyId, keyId))
    expect(rows.length).toBeLessThanOrEqual(REFUSALS_KEPT_PER_HOUR)
    expect(await originRows(keyId)).toHaveLength(0)
    const report = (await (await admin(service, `/keys/${keyId}/usage`)).json()) as Report
    expect(report.refusedIps[0]).toMatchObject({ ip: '198.51.100.7', count: 40 })
    expect(report.refusedIps.reduce((sum, o) => sum + o.count, 0) + report.refusedIpsOther).toBe(3_040)
    expect(report.refusedOriginsOther).toBe(0)
  })

  test('in memory, all keys together hold at most maxRefusals: a key that comes after the bound is counted as dropped', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const keys = await Promise.all([1, 2, 3].map((n) => seedKey(service, businessId, { type: 'public', name: `site ${n}` })))
    const database = await testDatabase()
    const usage = createUsageRecorder(database.background, { flushIntervalMs: 3_600_000, maxRefusals: 150 })
    const at = Date.now()
    for (const { record } of keys) {
      for (let i = 0; i < 1_000; i++) usage.origin(record.id, `https://${i}.flood.example`, false, at)
    }
    // The first key fills its summary (100), the second the rest of the bound (50), the third none.
    expect(usage.stats.dropped).toBe(1_000)
    await usage.close()
    const [first, second, third] = await Promise.all(keys.map(({ record }) => originRows(record.id)))
    expect([first!.length, second!.length, third!.length]).toEqual([100, 50, 0])
    const others = await database.db
      .select()
      .from(keyRefusedOthers)
      .where(and(eq(keyRefusedOthers.keyId, keys[1]!.record.id), eq(keyRefusedOthers.kind, 'origin')))
    expect(second!.reduce((sum, r) => sum + r.count, 0) + others.reduce((sum, r) => sum + r.count, 0)).toBe(1_000)
  })
})
