import { describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { flowIdempotencyKeys, flowRuns, flows } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService, type CallOptions } from '../support/service.ts'

const ORIGIN = 'https://shop.example.com'
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000'

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const { db } = await testDatabase()
  const [flow] = await db.insert(flows).values({ businessId, name: 'Welcome email' }).returning()
  const publicKey = await seedKey(service, businessId, { type: 'public', scopes: ['FLOW_TRIGGER'] })
  const privateKey = await seedKey(service, businessId, { type: 'private', scopes: ['FLOW_TRIGGER'] })
  return { service, businessId, flowId: flow!.id, publicKey, privateKey }
}
type Setup = Awaited<ReturnType<typeof setup>>

function trigger(s: Setup, options: Omit<CallOptions, 'key'> & { key?: string; flowId?: string } = {}) {
  const { flowId = s.flowId, key = s.publicKey.key, ...rest } = options
  return call(s.service, `/api/v0/flow/${flowId}/trigger`, { method: 'POST', key, origin: ORIGIN, ...rest })
}

async function runs() {
  const { db } = await testDatabase()
  return db.select().from(flowRuns)
}

/** {k: {k: ... 1}}, `depth` objects deep. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { k: 1 }
  for (let i = 1; i < depth; i++) value = { k: value }
  return value
}

async function accepted(response: Response): Promise<{ runId: string; status: string }> {
  expect(response.status).toBe(202)
  return (await response.json()) as { runId: string; status: string }
}

// Refusals for every route (no key, bad keys, origins, scopes, budgets; nothing written):
// test/api/route-matrix.test.ts, from the route table in test/support/route-table.ts.

// ---- Trigger -----------------------------------------------------------------------

describe('POST /api/v0/flow/:id/trigger', () => {
  test('a public key triggers a flow: 202 with exactly {runId, status}, and the run is stored', async () => {
    const s = await setup()
    const body = await accepted(await trigger(s, { body: { input: { email: 'ada@example.com', plan: 'pro' } } }))
    expect(Object.keys(body).sort()).toEqual(['runId', 'status'])
    expect(body.status).toBe('queued')
    const stored = await runs()
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({
      id: body.runId,
      flowId: s.flowId,
      businessId: s.businessId,
      keyId: s.publicKey.record.id,
      input: { email: 'ada@example.com', plan: 'pro' },
      status: 'queued',
      idempotencyKey: null,
    })
    expect(stored[0]!.createdAt).toBeInstanceOf(Date)
  })

  test('a private key triggers a flow defined through the admin API', async () => {
    const s = await setup()
    const defined = await admin(s.service, `/businesses/${s.businessId}/flows`, { body: { name: 'Onboarding' } })
    expect(defined.status).toBe(201)
    const { id } = (await defined.json()) as { id: string }
    const body = await accepted(await trigger(s, { flowId: id, key: s.privateKey.key, origin: undefined, body: { input: { a: 1 } } }))
    expect(Object.keys(body).sort()).toEqual(['runId', 'status'])
    expect((await runs())[0]).toMatchObject({ id: body.runId, flowId: id, keyId: s.privateKey.record.id })
  })

  test('a trigger without any body (Content-Length: 0, no Content-Type): 202, input null', async () => {
    const s = await setup()
    const body = await accepted(await trigger(s, { headers: { 'content-length': '0' } }))
    expect((await runs())[0]).toMatchObject({ id: body.runId, input: null })
  })

  test('a trigger without any body or body headers (like curl -X POST): 202, input null', async () => {
    const s = await setup()
    const body = await accepted(await trigger(s))
    expect((await runs())[0]).toMatchObject({ id: body.runId, input: null })
  })

  test('a JSON null body: 202, input null', async () => {
    const s = await setup()
    await accepted(await trigger(s, { body: 'null' }))
    expect((await runs())[0]!.input).toBeNull()
  })

  test('an empty JSON object: 202, input null', async () => {
    const s = await setup()
    await accepted(await trigger(s, { body: {} }))
    expect((await runs())[0]!.input).toBeNull()
  })

  test('a body that is not JSON: 415 without the JSON content type, 400 when it does not parse', async () => {
    const s = await setup()
    const plain = await trigger(s, { body: 'hello', headers: { 'content-type': 'text/plain' } })
    expect(plain.status).toBe(415)
    const broken = await trigger(s, { body: '{"input":' })
    expect(broken.status).toBe(400)
    expect(await runs()).toEqual([])
  })

  const invalid: [string, unknown, string][] = [
    ['input that is an array', { input: [1, 2] }, 'input'],
    ['input that is a string', { input: 'go' }, 'input'],
    ['input that is null', { input: null }, 'input'],
    ['input with over 100 properties', { input: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) }, 'input'],
    ['input over 16 KiB', { input: { blob: 'x'.repeat(16_400) } }, 'input'],
    ['input nested 10 levels', { input: nested(10) }, 'input.k.k.k.k.k.k.k.k'],
    ['input holding U+0000', { input: { note: 'a\u0000b' } }, 'input.note'],
    ['a body that is a JSON array', [1], 'body'],
  ]
  for (const [what, body, field] of invalid) {
    test(`${what}: 400 naming ${field}, nothing written`, async () => {
      const s = await setup()
      const response = await trigger(s, { body })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toContain(field === 'body' ? 'body' : `"${field}"`)
      expect(await runs()).toEqual([])
    })
  }

  test('a flow id that is no UUID: 400 naming id', async () => {
    const s = await setup()
    const response = await trigger(s, { flowId: 'welcome', body: {} })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"id"')
  })

  test('an unknown flow: 404, nothing written', async () => {
    const s = await setup()
    const response = await trigger(s, { flowId: UNKNOWN_ID, body: {} })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('not_found')
    expect(await runs()).toEqual([])
  })

  test("another business's flow: 404, nothing written", async () => {
    const s = await setup()
    const other = await setup()
    const response = await trigger(s, { flowId: other.flowId, body: {} })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).message).not.toContain('Welcome')
    expect(await runs()).toEqual([])
  })
})

// ---- Idempotency -------------------------------------------------------------------

describe('Idempotency-Key', () => {
  const withKey = (key: string, input: Record<string, unknown> = { n: 1 }) => ({
    headers: { 'idempotency-key': key },
    body: { input },
  })

  test('the same key with the same body answers the first run: same runId, 202, one run stored', async () => {
    const s = await setup()
    const first = await accepted(await trigger(s, withKey('order-42', { n: 1, m: { a: 1, b: 2 } })))
    // The same body with its keys in another order is the same body.
    const response = await trigger(s, withKey('order-42', { m: { b: 2, a: 1 }, n: 1 }))
    const second = await accepted(response)
    expect(second).toEqual(first)
    expect(response.headers.get('idempotent-replayed')).toBe('true')
    const stored = await runs()
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({ idempotencyKey: 'order-42', input: { n: 1, m: { a: 1, b: 2 } } })
  })

  test('the same key with another body: 422 idempotency_key_reused, nothing started', async () => {
    const s = await setup()
    await accepted(await trigger(s, withKey('order-43', { n: 1 })))
    const response = await trigger(s, withKey('order-43', { n: 2 }))
    expect(response.status).toBe(422)
    const error = await errorOf(response)
    expect(error.code).toBe('idempotency_key_reused')
    expect(error.message).toContain('order-43')
    expect(response.headers.get('idempotent-replayed')).toBeNull()
    const stored = await runs()
    expect(stored).toHaveLength(1)
    expect(stored[0]!.input).toEqual({ n: 1 })
  })

  test("an idempotency key belongs to the API key that sent it: a public key cannot claim the backend's run", async () => {
    const s = await setup()
    // An attacker copies the public key and sends the key the backend will use first.
    const attacker = await accepted(await trigger(s, withKey('order-44', { n: 666 })))
    const backend = await accepted(await trigger(s, { ...withKey('order-44', { n: 1 }), key: s.privateKey.key }))
    expect(backend.runId).not.toBe(attacker.runId)
    const stored = await runs()
    expect(stored).toHaveLength(2)
    const backendRun = stored.find((run) => run.id === backend.runId)!
    expect(backendRun).toMatchObject({ keyId: s.privateKey.record.id, input: { n: 1 } })
    // And the backend's own retry still replays its own run.
    const retry = await trigger(s, { ...withKey('order-44', { n: 1 }), key: s.privateKey.key })
    expect((await accepted(retry)).runId).toBe(backend.runId)
  })

  test('concurrent triggers with one key create one run', async () => {
    const s = await setup()
    const responses = await Promise.all(Array.from({ length: 8 }, () => trigger(s, withKey('burst'))))
    const bodies = await Promise.all(responses.map(accepted))
    expect(new Set(bodies.map((b) => b.runId)).size).toBe(1)
    expect(await runs()).toHaveLength(1)
  })

  test('different keys, or no key, create separate runs', async () => {
    const s = await setup()
    const a = await accepted(await trigger(s, withKey('a')))
    const b = await accepted(await trigger(s, withKey('b')))
    const c = await accepted(await trigger(s, { body: {} }))
    const d = await accepted(await trigger(s, { body: {} }))
    expect(new Set([a.runId, b.runId, c.runId, d.runId]).size).toBe(4)
  })

  test('the same key on another flow creates another run', async () => {
    const s = await setup()
    const { db } = await testDatabase()
    const [second] = await db.insert(flows).values({ businessId: s.businessId, name: 'Second' }).returning()
    const a = await accepted(await trigger(s, withKey('shared')))
    const b = await accepted(await trigger(s, { flowId: second!.id, ...withKey('shared') }))
    expect(a.runId).not.toBe(b.runId)
    expect(await runs()).toHaveLength(2)
  })

  test('a key used 23 hours ago still answers its first run', async () => {
    const s = await setup()
    const first = await accepted(await trigger(s, withKey('k')))
    await age('23 hours')
    expect(await accepted(await trigger(s, withKey('k')))).toEqual(first)
    expect(await runs()).toHaveLength(1)
  })

  test('a key used over 24 hours ago starts a new run, and answers that one afterwards', async () => {
    const s = await setup()
    const first = await accepted(await trigger(s, withKey('k')))
    await age('24 hours 1 second')
    const fresh = await accepted(await trigger(s, withKey('k')))
    expect(fresh.runId).not.toBe(first.runId)
    expect(await accepted(await trigger(s, withKey('k')))).toEqual(fresh)
    expect(await runs()).toHaveLength(2)
    const { db } = await testDatabase()
    const [claim] = await db.select().from(flowIdempotencyKeys)
    expect(claim!.runId).toBe(fresh.runId)
  })

  test('concurrent triggers with an expired key create one new run', async () => {
    const s = await setup()
    await accepted(await trigger(s, withKey('k')))
    await age('2 days')
    const bodies = await Promise.all(Array.from({ length: 6 }, () => trigger(s, withKey('k')).then(accepted)))
    expect(new Set(bodies.map((b) => b.runId)).size).toBe(1)
    expect(await runs()).toHaveLength(2)
  })

  const badKeys: [string, string][] = [
    ['empty', ''],
    ['over 255 characters', 'k'.repeat(256)],
    ['with a tab inside', 'a\tb'],
  ]
  for (const [what, value] of badKeys) {
    test(`a key ${what}: 400 naming idempotency-key, nothing written`, async () => {
      const s = await setup()
      const response = await trigger(s, withKey(value))
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toContain('"idempotency-key"')
      expect(await runs()).toEqual([])
    })
  }

  test('a key of 255 printable characters is fine', async () => {
    const s = await setup()
    await accepted(await trigger(s, withKey('~'.repeat(255))))
  })
})

/** Moves every stored run and key claim back in time, as if made that long ago. */
async function age(interval: string) {
  const { db } = await testDatabase()
  await db.execute(sql`update flow_runs set created_at = created_at - ${interval}::interval`)
  await db.execute(sql`update flow_idempotency_keys set created_at = created_at - ${interval}::interval`)
}

// ---- Runs --------------------------------------------------------------------------

describe('GET /api/v0/flow/:id/runs/:runId', () => {
  test('a private key reads a run', async () => {
    const s = await setup()
    const { runId } = await accepted(await trigger(s, { headers: { 'idempotency-key': 'x1' }, body: { input: { a: [1, 2] } } }))
    const response = await call(s.service, `/api/v0/flow/${s.flowId}/runs/${runId}`, { key: s.privateKey.key })
    expect(response.status).toBe(200)
    const run = (await response.json()) as Record<string, unknown>
    expect(run).toMatchObject({
      id: runId,
      flowId: s.flowId,
      status: 'queued',
      input: { a: [1, 2] },
      idempotencyKey: 'x1',
      keyId: s.publicKey.record.id,
    })
    expect(Date.parse(run.createdAt as string)).not.toBeNaN()
  })

  test('a run under another flow id: 404', async () => {
    const s = await setup()
    const { runId } = await accepted(await trigger(s, { body: {} }))
    const { db } = await testDatabase()
    const [other] = await db.insert(flows).values({ businessId: s.businessId, name: 'Other' }).returning()
    const response = await call(s.service, `/api/v0/flow/${other!.id}/runs/${runId}`, { key: s.privateKey.key })
    expect(response.status).toBe(404)
  })

  test("another business's run: 404", async () => {
    const s = await setup()
    const other = await setup()
    const { runId } = await accepted(await trigger(other, { body: {} }))
    const response = await call(s.service, `/api/v0/flow/${other.flowId}/runs/${runId}`, { key: s.privateKey.key })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('not_found')
  })

  test('a runId that is no UUID: 400 naming runId', async () => {
    const s = await setup()
    const response = await call(s.service, `/api/v0/flow/${s.flowId}/runs/latest`, { key: s.privateKey.key })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"runId"')
  })
})

test('the runs table holds nothing but what triggers wrote', async () => {
  const s = await setup()
  await accepted(await trigger(s, { body: {} }))
  const rows = await queryRows<{ n: number }>((await testDatabase()).db, sql`select count(*)::int as n from flow_runs`)
  expect(rows[0]!.n).toBe(1)
  const { db } = await testDatabase()
  expect(await db.select().from(flowRuns).where(eq(flowRuns.businessId, s.businessId))).toHaveLength(1)
})
