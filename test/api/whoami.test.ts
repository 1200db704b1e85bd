import { describe, expect, test } from 'bun:test'
import { call, seedBusiness, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'

describe('GET /api/v0/whoami', () => {
  test('answers the client context of a public key from an allowed origin', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { allowedOrigins: ['example.com', 'localhost:3000'] })
    const response = await call(service, '/api/v0/whoami', { key, origin: 'https://www.example.com' })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({
      businessId,
      keyType: 'public',
      origin: 'https://www.example.com',
      allowedOrigins: ['example.com', 'localhost:3000'],
      keyId: record.id,
    })
  })

  test('answers origin null and no allowed origins for a private key', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { type: 'private' })
    const response = await call(service, '/api/v0/whoami', { key })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ businessId, keyType: 'private', origin: null, allowedOrigins: [] })
  })

  test('each origin gets its own answer, and a key changed since shows its new settings', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { allowedOrigins: ['example.com'], scopes: ['ANALYTICS_WRITE'] })
    const ask = async (origin: string) => (await (await call(service, '/api/v0/whoami', { key, origin })).json()) as Record<string, unknown>
    expect(await ask('https://www.example.com')).toMatchObject({ origin: 'https://www.example.com', scopes: ['ANALYTICS_WRITE'] })
    expect(await ask('https://shop.example.com')).toMatchObject({ origin: 'https://shop.example.com' })
    await service.services.keys.update(
      businessId,
      record.id,
      { allowedOrigins: ['example.com', 'example.org'], scopes: ['ANALYTICS_WRITE', 'BLOG_READ'] },
      TEST_AUTHOR,
    )
    expect(await ask('https://www.example.com')).toMatchObject({
      origin: 'https://www.example.com',
      allowedOrigins: ['example.com', 'example.org'],
      scopes: ['ANALYTICS_WRITE', 'BLOG_READ'],
    })
  })
})
