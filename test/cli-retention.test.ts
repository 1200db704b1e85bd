import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { analyticsErasures, analyticsEvents, auditEntries } from '../db/schema/index.ts'
import { testDatabase, testEventsDatabase } from './support/database.ts'
import { loopback } from './support/loopback.ts'
import { ADMIN_TOKEN, seedBusiness, seedKey, testService } from './support/service.ts'

// The operator CLI's side of retention and erasure: a business's event retention, and erasing
// a person's events, through a real server on loopback.

const repoRoot = join(import.meta.dir, '..')

async function cli(baseUrl: string, args: string[]) {
  const child = Bun.spawn([process.execPath, 'src/cli.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, KEYGATE_URL: baseUrl, ADMIN_TOKEN },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => child.kill(), 20_000)
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

describe('cli businesses update --event-retention-days', () => {
  test('sets and resets the retention, shows it; a bad value prints the server refusal naming the field and exits 1', async () => {
    const service = await testService({ eventRetentionDays: 60 })
    const { base } = loopback(service)
    const businessId = await seedBusiness(service)

    const set = await cli(base, ['businesses', 'update', '--business', businessId, '--event-retention-days', '7'])
    expect(set.code).toBe(0)
    expect(set.stdout).toMatch(/event retention\s+7 days/)
    const shown = await cli(base, ['businesses', 'show', '--business', businessId, '--json'])
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: businessId, eventRetentionDays: 7, effectiveEventRetentionDays: 7 })

    for (const bad of ['0', '61', '1.5', 'week']) {
      const refused = await cli(base, ['businesses', 'update', '--business', businessId, '--event-retention-days', bad])
      expect(refused.code, bad).toBe(1)
      expect(refused.stderr, bad).toContain('invalid_request')
      expect(refused.stderr, bad).toContain('eventRetentionDays')
    }
    const reset = await cli(base, ['businesses', 'update', '--business', businessId, '--event-retention-days', 'default'])
    expect(reset.code).toBe(0)
    expect(reset.stdout).toMatch(/event retention\s+60 days \(the operator's EVENT_RETENTION_DAYS\)/)
    const usage = await cli(base, ['businesses', 'update', '--business', businessId])
    expect(usage.code).toBe(2)

    const trail = await (await testDatabase()).db.select().from(auditEntries).where(eq(auditEntries.businessId, businessId))
    expect(trail.filter((e) => e.action === 'business.updated').map((e) => e.changes)).toHaveLength(2)
  })
})

describe('cli businesses erase', () => {
  test("erases a person's events, waits until done, and prints the count; the trail holds no identifier", async () => {
    const service = await testService()
    const { base } = loopback(service)
    const businessId = await seedBusiness(service)
    const key = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const { db } = await testEventsDatabase()
    await db.insert(analyticsEvents).values(
      ['cli-person-5d1e', 'cli-person-5d1e', 'kept'].map((personId) => ({
        businessId,
        keyId: key.record.id,
        eventType: 'page_view',
        personId,
        occurredAt: new Date(Date.now() - 60_000),
        receivedAt: new Date(Date.now() - 60_000),
      })),
    )
    const erased = await cli(base, ['businesses', 'erase', '--business', businessId, '--person-id', 'cli-person-5d1e', '--wait'])
    expect(erased.stderr).toBe('')
    expect(erased.code).toBe(0)
    expect(erased.stdout).toMatch(/status\s+done/)
    expect(erased.stdout).toMatch(/deleted\s+2/)
    const id = /^id\s+(\S+)$/m.exec(erased.stdout)![1]!
    const shown = await cli(base, ['businesses', 'erasure', '--business', businessId, id, '--json'])
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, status: 'done', deleted: 2 })
    expect(await db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, businessId))).toHaveLength(1)

    const [entry] = await db
      .select()
      .from(auditEntries)
      .where(and(eq(auditEntries.businessId, businessId), eq(auditEntries.action, 'analytics.erased')))
    expect(entry!.changes).toEqual({ erasure: { from: null, to: id }, deleted: { from: null, to: 2 } })
    expect(JSON.stringify(await db.select().from(auditEntries))).not.toContain('cli-person-5d1e')

    const neither = await cli(base, ['businesses', 'erase', '--business', businessId])
    expect(neither.code).toBe(2)
  })

  test('with 100 requests pending, a further one prints the 429 rate_limited refusal and exits 1, recording nothing', async () => {
    const service = await testService({ erasure: { settleMs: 600_000 } })
    const { base } = loopback(service)
    const businessId = await seedBusiness(service)
    const { db } = await testEventsDatabase()
    await db
      .insert(analyticsErasures)
      .values(Array.from({ length: 100 }, (_, i) => ({ businessId, personId: `earlier-${i}`, requestedBy: 'admin' })))
    const refused = await cli(base, ['businesses', 'erase', '--business', businessId, '--person-id', 'cli-one-too-many'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('rate_limited')
    expect(refused.stderr).toContain('100 erasure requests pending')
    expect(await db.select().from(analyticsErasures).where(eq(analyticsErasures.businessId, businessId))).toHaveLength(100)
  })
})
