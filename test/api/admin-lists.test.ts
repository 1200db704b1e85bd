import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { accounts, businesses, flowRuns, flows, members } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// The admin lists page like the /api/v0 lists: `limit`, `cursor`, `{data, nextCursor}`.

type Service = Awaited<ReturnType<typeof testService>>

interface PageJson {
  data: { id: string; [field: string]: unknown }[]
  nextCursor: string | null
}

async function page(service: Service, path: string): Promise<PageJson> {
  const response = await admin(service, path)
  expect(response.status).toBe(200)
  return (await response.json()) as PageJson
}

/** Every record of a list, read `limit` at a time; also checks each page's size. */
async function readAll(service: Service, path: string, limit: number): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  for (let pages = 0; pages < 50; pages++) {
    const separator = path.includes('?') ? '&' : '?'
    const answer = await page(service, `${path}${separator}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
    ids.push(...answer.data.map((record) => record.id))
    if (answer.nextCursor === null) return ids
    expect(answer.data).toHaveLength(limit)
    cursor = answer.nextCursor
  }
  throw new Error('more than 50 pages')
}

/** Businesses created in one statement at the times given (text, to the microsecond). */
async function businessesAt(times: string[]): Promise<string[]> {
  const db = (await testDatabase()).db
  const rows = await db
    .insert(businesses)
    .values(times.map((at, i) => ({ name: `B${i}`, createdAt: sql`${at}::timestamptz` as unknown as Date })))
    .returning({ id: businesses.id })
  return rows.map((row) => row.id)
}

describe('GET /admin/v0/businesses paging', () => {
  test('pages cover every business once, newest first, even when times differ below the millisecond or tie', async () => {
    const service = await testService()
    // Three in one millisecond, two of them at the same microsecond: a millisecond cursor would skip or repeat.
    const ids = await businessesAt([
      '2026-01-01T00:00:00.123456Z',
      '2026-01-01T00:00:00.123457Z',
      '2026-01-01T00:00:00.123457Z',
      '2026-01-01T00:00:00.123Z',
      '2026-01-02T00:00:00Z',
    ])
    const whole = await page(service, '/businesses')
    expect(whole.nextCursor).toBeNull()
    const expected = whole.data.map((b) => b.id)
    expect(expected.toSorted()).toEqual(ids.toSorted())
    expect(expected[0]).toBe(ids[4]!)
    expect(expected.at(-1)).toBe(ids[3]!)
    for (const limit of [1, 2, 3]) expect(await readAll(service, '/businesses', limit)).toEqual(expected)
  })

  test('a page ends with the cursor of the next one; the last page has nextCursor null', async () => {
    const service = await testService()
    await businessesAt(['2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', '2026-01-03T00:00:00Z'])
    const first = await page(service, '/businesses?limit=2')
    expect(first.data.map((b) => b.name)).toEqual(['B2', 'B1'])
    expect(first.nextCursor).toMatch(/^[A-Za-z0-9_-]+$/)
    const second = await page(service, `/businesses?limit=2&cursor=${first.nextCursor}`)
    expect(second).toEqual({ data: [expect.objectContaining({ name: 'B0' })], nextCursor: null })
  })

  test.each([['0'], ['1001'], ['abc'], ['-1']])('limit=%s answers 400 naming limit and its range', async (limit) => {
    const service = await testService()
    const response = await admin(service, `/businesses?limit=${limit}`)
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('"limit"')
    expect(error.message).toContain('1 to 1000')
  })

  test.each([
    ['not base64url JSON', 'bm90LWpzb24'],
    ['a millisecond position', Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', crypto.randomUUID()])).toString('base64url')],
    ['a forged id', Buffer.from(JSON.stringify(['1767225600000000', 'x'])).toString('base64url')],
  ])('a cursor that is %s answers 400 naming cursor', async (_, cursor) => {
    const service = await testService()
    const response = await admin(service, `/businesses?cursor=${cursor}`)
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"cursor"')
  })

  test('without the token a list answers 401 and no records', async () => {
    const service = await testService()
    await seedBusiness(service)
    const response = await call(service, '/admin/v0/businesses?limit=1')
    expect(response.status).toBe(401)
    expect(JSON.stringify(await response.json())).not.toContain('Acme')
  })
})

describe('GET /admin/v0/businesses/:id/keys paging', () => {
  test('pages through the keys of one business, newest first', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const other = await seedBusiness(service, 'Other')
    const made: string[] = []
    // PGlite keeps times to the millisecond: distinct ones make "newest first" exact (a tie goes by id).
    for (let i = 0; i < 4; i++) {
      made.push((await seedKey(service, businessId, { name: `K${i}` })).record.id)
      await Bun.sleep(2)
    }
    await seedKey(service, other)
    const ids = await readAll(service, `/businesses/${businessId}/keys`, 3)
    expect(ids).toEqual(made.toReversed())
  })
})

describe('GET /admin/v0/businesses/:id/members paging', () => {
  test('pages through the members oldest first', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const db = (await testDatabase()).db
    const people = await db
      .insert(accounts)
      .values([0, 1, 2].map((i) => ({ email: `m${i}@example.com` })))
      .returning({ id: accounts.id })
    const rows = await db
      .insert(members)
      .values(
        ['2026-01-01T00:00:00.000001Z', '2026-01-01T00:00:00.000002Z', '2026-01-01T00:00:00.000003Z'].map((at, i) => ({
          businessId,
          accountId: people[i]!.id,
          role: 'member' as const,
          createdAt: sql`${at}::timestamptz` as unknown as Date,
        })),
      )
      .returning({ id: members.id })
    expect(await readAll(service, `/businesses/${businessId}/members`, 2)).toEqual(rows.map((r) => r.id))
  })
})

describe('GET /admin/v0/businesses/:id/flows', () => {
  test("lists the business's flows newest first, and no other business's", async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const other = await seedBusiness(service, 'Other')
    const first = await admin(service, `/businesses/${businessId}/flows`, { body: { name: 'Welcome' } })
    // Distinct milliseconds (PGlite's clock): a tie would be ordered by id.
    await Bun.sleep(2)
    const second = await admin(service, `/businesses/${businessId}/flows`, { body: { name: 'Churn' } })
    await admin(service, `/businesses/${other}/flows`, { body: { name: 'Elsewhere' } })
    const [welcome, churn] = [await first.json(), await second.json()]
    expect(await page(service, `/businesses/${businessId}/flows`)).toEqual({
      data: [
        { id: churn.id, businessId, name: 'Churn', createdAt: churn.createdAt },
        { id: welcome.id, businessId, name: 'Welcome', createdAt: welcome.createdAt },
      ],
      nextCursor: null,
    })
    expect(await readAll(service, `/businesses/${businessId}/flows`, 1)).toEqual([churn.id, welcome.id])
  })

  test('an unknown business answers 404 naming the id', async () => {
    const service = await testService()
    const id = crypto.randomUUID()
    const response = await admin(service, `/businesses/${id}/flows`)
    expect(response.status).toBe(404)
    const error = await errorOf(response)
    expect(error.code).toBe('not_found')
    expect(error.message).toContain(id)
  })

  test('a business id that is not a UUID answers 400', async () => {
    const service = await testService()
    const response = await admin(service, '/businesses/urn:uuid:0/flows')
    expect(response.status).toBe(400)
  })
})

describe('GET /admin/v0/flows/:id/runs', () => {
  async function flowWithRuns() {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { record: key } = await seedKey(service, businessId, { type: 'private', scopes: ['FLOW_TRIGGER'] })
    const db = (await testDatabase()).db
    const [flow, otherFlow] = await db
      .insert(flows)
      .values([
        { businessId, name: 'Welcome' },
        { businessId, name: 'Other' },
      ])
      .returning()
    const runs = await db
      .insert(flowRuns)
      .values([
        { flowId: flow!.id, businessId, keyId: key.id, input: { n: 1 }, createdAt: new Date('2026-01-01T00:00:00Z') },
        {
          flowId: flow!.id,
          businessId,
          keyId: key.id,
          input: null,
          idempotencyKey: 'retry-1',
          status: 'failed',
          createdAt: new Date('2026-01-02T00:00:00Z'),
        },
        { flowId: otherFlow!.id, businessId, keyId: key.id, createdAt: new Date('2026-01-03T00:00:00Z') },
      ])
      .returning()
    return { service, flow: flow!, key, runs }
  }

  test("lists the flow's runs newest first, with their input, and no other flow's", async () => {
    const { service, flow, key, runs } = await flowWithRuns()
    expect(await page(service, `/flows/${flow.id}/runs`)).toEqual({
      data: [
        {
          id: runs[1]!.id,
          flowId: flow.id,
          status: 'failed',
          input: null,
          idempotencyKey: 'retry-1',
          keyId: key.id,
          createdAt: '2026-01-02T00:00:00.000Z',
        },
        {
          id: runs[0]!.id,
          flowId: flow.id,
          status: 'queued',
          input: { n: 1 },
          idempotencyKey: null,
          keyId: key.id,
          createdAt: '2026-01-01T00:00:00.000Z',
        },
      ],
      nextCursor: null,
    })
    expect(await readAll(service, `/flows/${flow.id}/runs`, 1)).toEqual([runs[1]!.id, runs[0]!.id])
  })

  test('an unknown flow answers 404 saying where flow ids come from', async () => {
    const { service } = await flowWithRuns()
    const response = await admin(service, `/flows/${crypto.randomUUID()}/runs`)
    expect(response.status).toBe(404)
    expect((await errorOf(response)).message).toContain('/admin/v0/businesses/:id/flows')
  })

  test('without the token it answers 401 and no runs', async () => {
    const { service, flow } = await flowWithRuns()
    const response = await call(service, `/admin/v0/flows/${flow.id}/runs`)
    expect(response.status).toBe(401)
    expect(JSON.stringify(await response.json())).not.toContain(flow.id)
  })
})
