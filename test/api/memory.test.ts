import { describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { memoryDocuments } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService, type CallOptions } from '../support/service.ts'
import type { DocumentRecord } from '../../src/areas/memory/service.ts'

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const key = (await seedKey(service, businessId, { type: 'private', scopes: ['MEMORY_READ', 'MEMORY_WRITE'] })).key
  return { service, businessId, key }
}
type Setup = Awaited<ReturnType<typeof setup>>

/** A memory document as the API answers it. */
type Doc = DocumentRecord
interface DocPage {
  data: Doc[]
  nextCursor: string | null
}

function memory(s: Setup, path = '', options: Omit<CallOptions, 'key'> = {}) {
  return call(s.service, `/api/v0/memory${path}`, { key: s.key, ...options })
}

async function remember(s: Setup, body: Record<string, unknown>): Promise<Doc> {
  const response = await memory(s, '', { body })
  expect(response.status).toBe(201)
  return (await response.json()) as Doc
}

async function page(s: Setup, query: string): Promise<DocPage> {
  const response = await memory(s, query)
  expect(response.status).toBe(200)
  return (await response.json()) as DocPage
}

async function stored() {
  const { db } = await testDatabase()
  return db
    .select({ id: memoryDocuments.id, title: memoryDocuments.title, content: memoryDocuments.content, metadata: memoryDocuments.metadata })
    .from(memoryDocuments)
}

// Refusals for every route (no key, bad keys, origins, scopes, budgets; nothing written):
// test/api/route-matrix.test.ts, from the route table in test/support/route-table.ts.

// ---- Create, read, change, delete --------------------------------------------------

describe('POST /api/v0/memory', () => {
  test('stores a document: 201 with it', async () => {
    const s = await setup()
    const doc = await remember(s, {
      title: 'Refund policy',
      content: 'Refunds within 30 days.',
      metadata: { source: 'faq', tags: ['billing'] },
    })
    expect(doc).toMatchObject({
      title: 'Refund policy',
      content: 'Refunds within 30 days.',
      metadata: { source: 'faq', tags: ['billing'] },
    })
    expect(doc.rank).toBeUndefined()
    expect(Date.parse(doc.createdAt)).not.toBeNaN()
    const { db } = await testDatabase()
    const [row] = await db.select().from(memoryDocuments).where(eq(memoryDocuments.id, doc.id))
    expect(row).toMatchObject({ businessId: s.businessId, title: 'Refund policy', metadata: { source: 'faq', tags: ['billing'] } })
  })

  test('title and metadata are optional', async () => {
    const s = await setup()
    expect(await remember(s, { content: 'Just text' })).toMatchObject({ title: null, metadata: {} })
  })

  const invalid: [string, Record<string, unknown>, string][] = [
    ['no content', { title: 'T' }, 'content'],
    ['empty content', { content: '' }, 'content'],
    ['content over 100000 characters', { content: 'x'.repeat(100_001) }, 'content'],
    ['content that is a number', { content: 7 }, 'content'],
    ['content holding U+0000', { content: 'a\u0000b' }, 'content'],
    ['an empty title', { content: 'x', title: '' }, 'title'],
    ['a title over 300 characters', { content: 'x', title: 't'.repeat(301) }, 'title'],
    ['metadata that is an array', { content: 'x', metadata: ['a'] }, 'metadata'],
    ['metadata that is a string', { content: 'x', metadata: 'a' }, 'metadata'],
    [
      'metadata with over 50 properties',
      { content: 'x', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
      'metadata',
    ],
    ['metadata over 16 KiB', { content: 'x', metadata: { blob: 'x'.repeat(17_000) } }, 'metadata'],
    ['metadata holding U+0000', { content: 'x', metadata: { note: 'a\u0000' } }, 'metadata.note'],
  ]
  for (const [what, body, field] of invalid) {
    test(`${what}: 400 naming ${field}, nothing written`, async () => {
      const s = await setup()
      const response = await memory(s, '', { body })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toContain(`"${field}"`)
      expect(await stored()).toEqual([])
    })
  }
})

describe('GET /api/v0/memory/:id', () => {
  test('reads a document', async () => {
    const s = await setup()
    const doc = await remember(s, { content: 'Remember me' })
    const response = await memory(s, `/${doc.id}`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual(doc)
  })

  test("another business's document: 404", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await remember(other, { content: 'Secret' })
    const response = await memory(s, `/${theirs.id}`)
    expect(response.status).toBe(404)
    const error = await errorOf(response)
    expect(error.code).toBe('not_found')
    expect(error.message).not.toContain('Secret')
  })

  test('an id that is no UUID: 400 naming id', async () => {
    const s = await setup()
    const response = await memory(s, '/latest')
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"id"')
  })
})

describe('PATCH /api/v0/memory/:id', () => {
  test('changes the fields sent, keeps the others, and the search follows', async () => {
    const s = await setup()
    const doc = await remember(s, { title: 'Old', content: 'Bananas are yellow', metadata: { a: 1 } })
    const response = await memory(s, `/${doc.id}`, { method: 'PATCH', body: { content: 'Cherries are red', title: null } })
    expect(response.status).toBe(200)
    const changed = (await response.json()) as Doc
    expect(changed).toMatchObject({ id: doc.id, title: null, content: 'Cherries are red', metadata: { a: 1 } })
    expect(Date.parse(changed.updatedAt)).toBeGreaterThanOrEqual(Date.parse(doc.updatedAt))
    expect((await page(s, '?q=banana')).data).toEqual([])
    expect((await page(s, '?q=cherry')).data.map((d) => d.id)).toEqual([doc.id])
  })

  test('an empty body: 400, unchanged', async () => {
    const s = await setup()
    const doc = await remember(s, { content: 'x' })
    const response = await memory(s, `/${doc.id}`, { method: 'PATCH', body: {} })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('at least one field')
  })

  test('invalid metadata: 400 naming metadata, unchanged', async () => {
    const s = await setup()
    const doc = await remember(s, { content: 'x', metadata: { a: 1 } })
    const response = await memory(s, `/${doc.id}`, { method: 'PATCH', body: { metadata: [1] } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"metadata"')
    expect((await stored())[0]!.metadata).toEqual({ a: 1 })
  })

  test("another business's document: 404, unchanged", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await remember(other, { content: 'Theirs' })
    const response = await memory(s, `/${theirs.id}`, { method: 'PATCH', body: { content: 'Mine' } })
    expect(response.status).toBe(404)
    expect((await stored())[0]!.content).toBe('Theirs')
  })
})

describe('DELETE /api/v0/memory/:id', () => {
  test('deletes a document: 204, then 404', async () => {
    const s = await setup()
    const doc = await remember(s, { content: 'x' })
    expect((await memory(s, `/${doc.id}`, { method: 'DELETE' })).status).toBe(204)
    expect(await stored()).toEqual([])
    expect((await memory(s, `/${doc.id}`, { method: 'DELETE' })).status).toBe(404)
  })

  test("another business's document: 404, kept", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await remember(other, { content: 'Theirs' })
    expect((await memory(s, `/${theirs.id}`, { method: 'DELETE' })).status).toBe(404)
    expect(await stored()).toHaveLength(1)
  })
})

// ---- Listing and search ------------------------------------------------------------

describe('GET /api/v0/memory', () => {
  test('lists newest first in cursor pages, each document once', async () => {
    const s = await setup()
    const ids: string[] = []
    // Times are kept to the millisecond: distinct ones make "newest first" exact.
    for (let i = 0; i < 5; i++) {
      ids.unshift((await remember(s, { content: `note ${i}` })).id)
      await Bun.sleep(3)
    }
    const seen: string[] = []
    let cursor: string | null = null
    for (let pages = 0; pages < 5; pages++) {
      const result = await page(s, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      seen.push(...result.data.map((d) => d.id))
      cursor = result.nextCursor
      if (!cursor) break
    }
    expect(seen).toEqual(ids)
  })

  test("never lists another business's documents", async () => {
    const s = await setup()
    const other = await setup()
    await remember(other, { title: 'Refund policy', content: 'refund' })
    expect((await page(s, '')).data).toEqual([])
    expect((await page(s, '?q=refund')).data).toEqual([])
  })

  const invalid: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['cursor=%21%21', 'cursor'],
    ['cursor=WzFd', 'cursor'],
    [`q=${'x'.repeat(501)}`, 'q'],
    ['q=', 'q'],
  ]
  for (const [query, field] of invalid) {
    test(`?${query.slice(0, 20)}: 400 naming ${field}`, async () => {
      const s = await setup()
      const response = await memory(s, `?${query}`)
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toContain(`"${field}"`)
    })
  }
})

describe('full-text search (?q=)', () => {
  async function library(s: Setup) {
    return {
      refunds: await remember(s, { title: 'Refund policy', content: 'Customers may ask for their money back within 30 days of purchase.' }),
      shipping: await remember(s, { title: 'Shipping', content: 'We ship worldwide. Damaged parcels are refunded in full.' }),
      hours: await remember(s, { title: 'Opening hours', content: 'The support team answers from 9 to 5 on weekdays.' }),
    }
  }

  test('finds documents by stemmed words, title matches ranked first', async () => {
    const s = await setup()
    const docs = await library(s)
    const result = await page(s, '?q=refunds')
    expect(result.data.map((d) => d.id)).toEqual([docs.refunds.id, docs.shipping.id])
    expect(result.data[0]!.rank!).toBeGreaterThan(result.data[1]!.rank!)
  })

  test('websearch syntax: all words, quoted phrases, excluded words', async () => {
    const s = await setup()
    const docs = await library(s)
    expect((await page(s, '?q=ship%20damaged')).data.map((d) => d.id)).toEqual([docs.shipping.id])
    expect((await page(s, `?q=${encodeURIComponent('"money back"')}`)).data.map((d) => d.id)).toEqual([docs.refunds.id])
    expect((await page(s, `?q=${encodeURIComponent('refund -shipping')}`)).data.map((d) => d.id)).toEqual([docs.refunds.id])
    expect((await page(s, `?q=${encodeURIComponent('weekdays or parcels')}`)).data.map((d) => d.id).sort()).toEqual(
      [docs.hours.id, docs.shipping.id].sort(),
    )
  })

  test('odd input is no error: unbalanced quotes, operators, stop words only', async () => {
    const s = await setup()
    await library(s)
    for (const q of ['"refund', 'refund & | !', 'the and of', "'; drop table memory_documents; --"]) {
      const response = await memory(s, `?q=${encodeURIComponent(q)}`)
      expect(response.status).toBe(200)
    }
    expect((await page(s, '?q=the')).data).toEqual([])
    expect(await stored()).toHaveLength(3)
  })

  test('pages through results by relevance, each once', async () => {
    const s = await setup()
    const ids = new Set<string>()
    for (let i = 0; i < 5; i++)
      ids.add((await remember(s, { title: i % 2 ? 'Invoice' : null, content: `invoice number ${i} ${'invoice '.repeat(i)}` })).id)
    await remember(s, { content: 'unrelated' })
    const seen: Doc[] = []
    let cursor: string | null = null
    for (let pages = 0; pages < 6; pages++) {
      const result = await page(s, `?q=invoice&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      seen.push(...result.data)
      cursor = result.nextCursor
      if (!cursor) break
    }
    expect(new Set(seen.map((d) => d.id))).toEqual(ids)
    expect(seen).toHaveLength(5)
    const ranks = seen.map((d) => d.rank!)
    expect(ranks).toEqual([...ranks].sort((a, b) => b - a))
  })

  test('a cursor of another query, or of the plain list: 400 naming cursor', async () => {
    const s = await setup()
    for (let i = 0; i < 3; i++) await remember(s, { content: `invoice ${i}` })
    const searched = await page(s, '?q=invoice&limit=1')
    const listed = await page(s, '?limit=1')
    for (const query of [
      `?q=other&cursor=${searched.nextCursor}`,
      `?q=invoice&cursor=${listed.nextCursor}`,
      `?cursor=${searched.nextCursor}`,
    ]) {
      const response = await memory(s, query)
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toContain('"cursor"')
    }
  })

  test('the search vector is indexed with GIN and the index serves the query', async () => {
    await setup()
    const { db } = await testDatabase()
    const plan = await db.transaction(async (tx) => {
      // With few rows the planner prefers a scan; forbid it to see that the index applies.
      await tx.execute(sql`set local enable_seqscan = off`)
      return queryRows<Record<string, string>>(
        tx,
        sql`explain select id from memory_documents where search @@ websearch_to_tsquery('english'::regconfig, 'refund')`,
      )
    })
    expect(plan.map((row) => Object.values(row)[0]).join('\n')).toContain('memory_documents_search_idx')
  })
})
