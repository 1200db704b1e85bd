import { describe, expect, test } from 'bun:test'
import { asc, sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { companies } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

const ORIGIN = 'https://example.com'
const PRIVATE_SCOPES = ['AUDIENCE_COMPANY_WRITE', 'AUDIENCE_COMPANY_READ']

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const pk = (await seedKey(service, businessId, { scopes: ['AUDIENCE_COMPANY_WRITE'] })).key
  const sk = (await seedKey(service, businessId, { type: 'private', scopes: PRIVATE_SCOPES })).key
  return { service, businessId, pk, sk }
}

type Setup = Awaited<ReturnType<typeof setup>>

function upsert(s: Setup, body: unknown, key = s.sk) {
  return call(s.service, '/api/v0/audience/companies', { method: 'POST', key, origin: key === s.pk ? ORIGIN : undefined, body })
}

async function storedCompanies() {
  const { db } = await testDatabase()
  return db.select().from(companies).orderBy(asc(companies.createdAt), asc(companies.domain))
}

async function countCompanies(): Promise<number> {
  const [row] = await queryRows<{ n: number }>((await testDatabase()).db, sql`select count(*)::int as n from companies`)
  return row!.n
}

describe('POST /api/v0/audience/companies', () => {
  test('a public key creates a company and gets only the count back; the domain is stored lower-cased', async () => {
    const s = await setup()
    const response = await upsert(s, { domain: 'Acme.Example.COM', name: 'Acme' }, s.pk)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ upserted: 1 })
    expect(await storedCompanies()).toMatchObject([
      { businessId: s.businessId, domain: 'acme.example.com', name: 'Acme', externalId: null },
    ])
  })

  test('a private key gets the companies written', async () => {
    const s = await setup()
    const response = await upsert(s, { companies: [{ externalId: 'c1', name: 'One' }, { domain: 'two.io' }] })
    const body = await response.json()
    expect(body.upserted).toBe(2)
    expect(body.data).toMatchObject([{ externalId: 'c1', name: 'One', domain: null }, { domain: 'two.io' }])
  })

  test('matches on externalId, else on domain; a domain-only company is claimed by a new externalId', async () => {
    const s = await setup()
    await upsert(s, { domain: 'acme.io', name: 'Acme', properties: { size: 10 } })
    await upsert(s, { domain: 'ACME.io', properties: { tier: 'gold' } })
    await upsert(s, { externalId: 'c1', domain: 'acme.io' })
    await upsert(s, { externalId: 'c1', name: 'Acme Inc.' })
    expect(await storedCompanies()).toMatchObject([
      { externalId: 'c1', domain: 'acme.io', name: 'Acme Inc.', properties: { size: 10, tier: 'gold' } },
    ])
  })

  test('a domain held by a company with another externalId: 409 conflict, nothing written', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'c1', domain: 'acme.io' })
    const response = await upsert(s, { companies: [{ domain: 'other.io' }, { externalId: 'c2', domain: 'acme.io' }] })
    expect(response.status).toBe(409)
    expect((await errorOf(response)).message).toStartWith('Body field "companies[1].domain": another company')
    expect(await countCompanies()).toBe(1)
  })

  test('records naming the same company in one batch: the last one wins', async () => {
    const s = await setup()
    const response = await upsert(s, {
      companies: [
        { domain: 'acme.io', name: 'Old' },
        { domain: 'ACME.IO', name: 'New' },
      ],
    })
    expect((await response.json()).upserted).toBe(1)
    expect(await storedCompanies()).toMatchObject([{ domain: 'acme.io', name: 'New' }])
  })

  test('a company with neither externalId nor domain is refused, naming its index', async () => {
    const s = await setup()
    const response = await upsert(s, { companies: [{ domain: 'a.io' }, { name: 'Nameless' }] })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toBe(
      'Invalid body field "companies[1]": give "externalId" or "domain" (or both) to say which company to create or update.',
    )
    expect(await countCompanies()).toBe(0)
  })

  test.each([['https://acme.io'], ['acme.io/path'], ['acme'], ['acme.io:8080']])(
    'domain %s is refused, and nothing of the batch written',
    async (domain) => {
      const s = await setup()
      const response = await upsert(s, { companies: [{ domain: 'ok.io' }, { domain }] })
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toBe(
        'Invalid body field "companies[1].domain": must be a domain name like "example.com", without scheme, path or port.',
      )
      expect(await countCompanies()).toBe(0)
    },
  )

  test('more than 1000 companies are refused', async () => {
    const s = await setup()
    const response = await upsert(s, { companies: Array.from({ length: 1001 }, (_, i) => ({ externalId: `c${i}` })) })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid body field "companies": ')
    expect(await countCompanies()).toBe(0)
  })

  test('a key without AUDIENCE_COMPANY_WRITE: 403 insufficient_scope', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { scopes: ['AUDIENCE_PERSON_WRITE'] })
    const response = await call(s.service, '/api/v0/audience/companies', { key, origin: ORIGIN, body: { domain: 'a.io' } })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
    expect(await countCompanies()).toBe(0)
  })
})

describe('GET /api/v0/audience/companies', () => {
  test('pages newest first and filters by domain in any case', async () => {
    const s = await setup()
    // Times are kept to the millisecond: distinct ones make "newest first" exact.
    for (const domain of ['a.io', 'b.io', 'c.io']) {
      await upsert(s, { domain })
      await Bun.sleep(3)
    }
    const first = await (await call(s.service, '/api/v0/audience/companies?limit=2', { key: s.sk })).json()
    expect(first.data.map((c: { domain: string }) => c.domain)).toEqual(['c.io', 'b.io'])
    const second = await (await call(s.service, `/api/v0/audience/companies?limit=2&cursor=${first.nextCursor}`, { key: s.sk })).json()
    expect(second).toMatchObject({ data: [{ domain: 'a.io' }], nextCursor: null })
    const filtered = await (await call(s.service, '/api/v0/audience/companies?domain=B.IO', { key: s.sk })).json()
    expect(filtered.data.map((c: { domain: string }) => c.domain)).toEqual(['b.io'])
  })

  test('a public key: 403 public_key_not_allowed', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/companies', { key: s.pk, origin: ORIGIN })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('public_key_not_allowed')
  })
})

describe('GET /api/v0/audience/companies/:id', () => {
  test('shows a company', async () => {
    const s = await setup()
    const id = (await (await upsert(s, { domain: 'acme.io', name: 'Acme' })).json()).data[0].id
    const response = await call(s.service, `/api/v0/audience/companies/${id}`, { key: s.sk })
    expect(response.status).toBe(200)
    const company = await response.json()
    expect(company).toMatchObject({ id, domain: 'acme.io', name: 'Acme', externalId: null, properties: {} })
    expect(Object.keys(company).sort()).toEqual(['createdAt', 'domain', 'externalId', 'id', 'name', 'properties', 'updatedAt'])
  })

  test("another business's company: 404", async () => {
    const s = await setup()
    const id = (await (await upsert(s, { domain: 'acme.io' })).json()).data[0].id
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    const response = await call(s.service, `/api/v0/audience/companies/${id}`, { key: otherKey })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('not_found')
  })

  test('a private key without AUDIENCE_COMPANY_READ: 403 insufficient_scope', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { type: 'private', scopes: ['AUDIENCE_COMPANY_WRITE'] })
    const response = await call(s.service, `/api/v0/audience/companies/${crypto.randomUUID()}`, { key })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
  })
})

describe('public keys create companies and change nothing stored', () => {
  test("an existing domain sent with a public key keeps its stored name and externalId; the answer is a fresh create's", async () => {
    const s = await setup()
    await upsert(s, { externalId: 'c-1', domain: 'acme.example.com', name: 'Acme' })
    const probe = await upsert(s, { externalId: 'c-666', domain: 'acme.example.com', name: 'Pwned' }, s.pk)
    const fresh = await upsert(s, { domain: 'new.example.com', name: 'New' }, s.pk)
    expect(probe.status).toBe(200)
    expect(await probe.json()).toEqual(await fresh.json())
    const stored = await storedCompanies()
    expect(stored.find((c) => c.domain === 'acme.example.com')).toMatchObject({ externalId: 'c-1', name: 'Acme' })
    expect(stored).toHaveLength(2)
  })
})
