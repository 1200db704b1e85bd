import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, businesses, flows } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, testService } from '../support/service.ts'

// The operators' API.

async function newBusiness(service: Awaited<ReturnType<typeof testService>>, name = 'Acme') {
  const response = await admin(service, '/businesses', { body: { name } })
  expect(response.status).toBe(201)
  return (await response.json()) as { id: string; name: string }
}

const publicKey = {
  type: 'public',
  name: 'Website',
  allowedOrigins: ['example.com'],
  scopes: ['ANALYTICS_WRITE'],
  createdBy: 'ops@acme.test',
}

describe('admin authorization', () => {
  const refused: [string, Record<string, string>][] = [
    ['no header', {}],
    ['a wrong token', { authorization: 'Bearer wrong-token-of-the-same-sort-xx' }],
    ['a prefix of the token', { authorization: 'Bearer test-admin-token' }],
    ['another scheme', { authorization: 'Basic test-admin-token-0123456789' }],
  ]
  test.each(refused)('%s answers 401 unauthorized and creates nothing', async (_, headers) => {
    const service = await testService()
    const response = await call(service, '/admin/v0/businesses', { body: { name: 'X' }, headers })
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('unauthorized')
    expect(await (await testDatabase()).db.select().from(businesses)).toEqual([])
  })

  test('an API key is not an admin token', async () => {
    const service = await testService()
    const response = await call(service, '/admin/v0/businesses', { key: 'sk_' + 'a'.repeat(32) })
    expect(response.status).toBe(401)
  })

  test('an invalid body without the token answers 401, not 400', async () => {
    const service = await testService()
    expect((await call(service, '/admin/v0/businesses', { body: '{broken' })).status).toBe(401)
  })
})

describe('businesses', () => {
  test('POST /businesses creates one and answers 201 with its id', async () => {
    const service = await testService()
    const business = await newBusiness(service, '  Acme  ')
    expect(business.name).toBe('Acme')
    const rows = await (await testDatabase()).db.select().from(businesses)
    expect(rows.map((r) => r.id)).toEqual([business.id])
  })

  test('an empty name answers 400 naming the field', async () => {
    const service = await testService()
    const response = await admin(service, '/businesses', { body: { name: '' } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"name"')
  })
})

describe('keys', () => {
  test('POST /businesses/:id/keys answers 201 with the record and the key, once', async () => {
    const service = await testService()
    const { id } = await newBusiness(service)
    const response = await admin(service, `/businesses/${id}/keys`, { body: publicKey })
    expect(response.status).toBe(201)
    const created = await response.json()
    expect(created.key).toMatch(/^pk_[A-Za-z0-9]{36}$/)
    expect(created).toMatchObject({
      businessId: id,
      type: 'public',
      name: 'Website',
      description: null,
      allowedOrigins: ['example.com'],
      scopes: ['ANALYTICS_WRITE'],
      expiresAt: null,
      lastUsedAt: null,
      createdBy: 'ops@acme.test',
      revokedAt: null,
    })
    expect(Date.parse(created.createdAt)).not.toBeNaN()
    for (const path of [`/keys/${created.id}`, `/businesses/${id}/keys`]) {
      const text = await (await admin(service, path)).text()
      expect(text).toContain(created.id)
      expect(text).not.toContain(created.key)
    }
  })

  test("GET /businesses/:id/keys answers {data} with that business's keys only", async () => {
    const service = await testService()
    const a = await newBusiness(service, 'A')
    const b = await newBusiness(service, 'B')
    await admin(service, `/businesses/${a.id}/keys`, { body: publicKey })
    await admin(service, `/businesses/${b.id}/keys`, { body: { ...publicKey, name: 'Other' } })
    const body = await (await admin(service, `/businesses/${a.id}/keys`)).json()
    expect(body.data.map((k: { name: string }) => k.name)).toEqual(['Website'])
  })

  test('PATCH /keys/:id changes settings, effective on the next request', async () => {
    const service = await testService()
    const { id } = await newBusiness(service)
    const created = await (
      await admin(service, `/businesses/${id}/keys`, {
        body: { ...publicKey, scopes: ['ANALYTICS_WRITE', 'BLOG_READ'] },
      })
    ).json()
    expect((await call(service, '/api/v0/whoami', { key: created.key, origin: 'https://example.com' })).status).toBe(200)
    const patched = await admin(service, `/keys/${created.id}`, {
      method: 'PATCH',
      body: { name: 'Renamed', allowedOrigins: ['https://app.other.org'], description: 'for the app' },
    })
    expect(patched.status).toBe(200)
    expect(await patched.json()).toMatchObject({ name: 'Renamed', allowedOrigins: ['https://app.other.org'], description: 'for the app' })
    const refused = await call(service, '/api/v0/whoami', { key: created.key, origin: 'https://example.com' })
    expect((await errorOf(refused)).code).toBe('origin_not_allowed')
    expect((await call(service, '/api/v0/whoami', { key: created.key, origin: 'https://app.other.org' })).status).toBe(200)
  })

  test('PATCH applies the creation rules and changes nothing when one fails', async () => {
    const service = await testService()
    const { id } = await newBusiness(service)
    const created = await (await admin(service, `/businesses/${id}/keys`, { body: publicKey })).json()
    const response = await admin(service, `/keys/${created.id}`, {
      method: 'PATCH',
      body: { name: 'New name', scopes: ['MEMORY_READ'] },
    })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('scopes')
    const [row] = await (await testDatabase()).db.select().from(apiKeys).where(eq(apiKeys.id, created.id))
    expect(row!.name).toBe('Website')
  })

  test('DELETE /keys/:id revokes (204), keeps the record, and the key is refused next', async () => {
    const service = await testService()
    const { id } = await newBusiness(service)
    const created = await (await admin(service, `/businesses/${id}/keys`, { body: publicKey })).json()
    expect((await call(service, '/api/v0/whoami', { key: created.key, origin: 'https://example.com' })).status).toBe(200)
    const response = await admin(service, `/keys/${created.id}`, { method: 'DELETE' })
    expect(response.status).toBe(204)
    const record = await (await admin(service, `/keys/${created.id}`)).json()
    expect(Date.parse(record.revokedAt)).not.toBeNaN()
    const refused = await call(service, '/api/v0/whoami', { key: created.key, origin: 'https://example.com' })
    expect((await errorOf(refused)).code).toBe('invalid_api_key')
    expect((await admin(service, `/keys/${created.id}`, { method: 'DELETE' })).status).toBe(204)
    const again = await (await admin(service, `/keys/${created.id}`)).json()
    expect(again.revokedAt).toBe(record.revokedAt)
  })

  test('a revoked key cannot be changed (409 conflict)', async () => {
    const service = await testService()
    const { id } = await newBusiness(service)
    const created = await (await admin(service, `/businesses/${id}/keys`, { body: publicKey })).json()
    await admin(service, `/keys/${created.id}`, { method: 'DELETE' })
    const response = await admin(service, `/keys/${created.id}`, { method: 'PATCH', body: { name: 'x' } })
    expect(response.status).toBe(409)
  })

  test('unknown ids answer 404 and malformed ids 400', async () => {
    const service = await testService()
    const unknown = '00000000-0000-4000-8000-000000000000'
    for (const [path, method] of [
      [`/keys/${unknown}`, 'GET'],
      [`/keys/${unknown}`, 'DELETE'],
      [`/businesses/${unknown}/keys`, 'GET'],
    ] as const) {
      const response = await admin(service, path, { method })
      expect(response.status).toBe(404)
      expect((await errorOf(response)).code).toBe('not_found')
    }
    const created = await admin(service, `/businesses/${unknown}/keys`, { body: publicKey })
    expect(created.status).toBe(404)
    const malformed = await admin(service, '/keys/not-a-uuid')
    expect(malformed.status).toBe(400)
    expect((await errorOf(malformed)).message).toContain('"id"')
  })
})

describe('flows', () => {
  test('POST /businesses/:id/flows defines a flow', async () => {
    const service = await testService()
    const { id } = await newBusiness(service)
    const response = await admin(service, `/businesses/${id}/flows`, { body: { name: 'Welcome' } })
    expect(response.status).toBe(201)
    const flow = await response.json()
    expect(flow).toMatchObject({ businessId: id, name: 'Welcome' })
    const rows = await (await testDatabase()).db.select().from(flows)
    expect(rows.map((r) => r.id)).toEqual([flow.id])
  })

  test('a flow for an unknown business answers 404', async () => {
    const service = await testService()
    const response = await admin(service, '/businesses/00000000-0000-4000-8000-000000000000/flows', { body: { name: 'W' } })
    expect(response.status).toBe(404)
  })
})
