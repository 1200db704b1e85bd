import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { people } from '../../db/schema/index.ts'
import { queryRows, sql } from '../../db/client.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// A business's server signs a person's identifier; its pages send the
// hash; a public key may then update that person. Without a valid hash the answer is the
// same and nothing stored changes.
const ORIGIN = 'https://www.example.com'

/** What a business's server computes (the README shows the same in a few lines). */
const sign = (secret: string, identifier: string) => createHmac('sha256', secret).update(identifier).digest('hex')

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const site = await seedKey(service, businessId, {
    type: 'public',
    scopes: ['AUDIENCE_PERSON_WRITE', 'AUDIENCE_LIST_WRITE'],
  })
  const server = await seedKey(service, businessId, {
    type: 'private',
    scopes: ['AUDIENCE_PERSON_WRITE', 'AUDIENCE_LIST_WRITE', 'AUDIENCE_LIST_READ'],
  })
  // Ada exists, stored by the business's server.
  const stored = await call(service, '/api/v0/audience/people', {
    method: 'POST',
    key: server.key,
    body: { externalId: 'u-ada', email: 'Ada@Example.com', firstName: 'Ada' },
  })
  expect(stored.status).toBe(200)
  return { service, businessId, site: site.key, server: server.key }
}

async function newSecret(service: Service, businessId: string): Promise<string> {
  const response = await admin(service, `/businesses/${businessId}/identity-secret`, { method: 'POST' })
  expect(response.status).toBe(201)
  const { secret } = (await response.json()) as { secret: string }
  expect(secret.length).toBeGreaterThanOrEqual(32)
  return secret
}

const firstNames = async () =>
  (await queryRows<{ first_name: string | null }>((await testDatabase()).db, sql`select first_name from people order by created_at`)).map(
    (row) => row.first_name,
  )

const writeAsPage = (service: Service, site: string, body: unknown) =>
  call(service, '/api/v0/audience/people', { method: 'POST', key: site, origin: ORIGIN, body })

describe('verified identity for public-key people writes', () => {
  test('without a secret a public key only creates: a hash changes nothing', async () => {
    const { service, site } = await setup()
    const answer = await writeAsPage(service, site, { externalId: 'u-ada', firstName: 'Eve', identityHash: sign('guess', 'u-ada') })
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({ upserted: 1 })
    expect(await firstNames()).toEqual(['Ada'])
  })

  test('with a secret: a valid hash updates, a wrong one and none do not, and the answers are identical', async () => {
    const { service, businessId, site } = await setup()
    const secret = await newSecret(service, businessId)
    const answers: unknown[] = []
    for (const identityHash of [undefined, sign('another secret', 'u-ada'), sign(secret, 'u-someone-else'), 'f'.repeat(64)]) {
      const response = await writeAsPage(service, site, {
        externalId: 'u-ada',
        firstName: 'Eve',
        ...(identityHash ? { identityHash } : {}),
      })
      expect(response.status).toBe(200)
      answers.push(await response.json())
      expect(await firstNames()).toEqual(['Ada'])
    }
    const verified = await writeAsPage(service, site, { externalId: 'u-ada', firstName: 'Grace', identityHash: sign(secret, 'u-ada') })
    expect(verified.status).toBe(200)
    answers.push(await verified.json())
    expect(await firstNames()).toEqual(['Grace'])
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify({ upserted: 1 })]))
  })

  test('without an externalId the hash covers the lower-cased email; in a batch each item counts alone', async () => {
    const { service, businessId, site } = await setup()
    const secret = await newSecret(service, businessId)
    const batch = {
      people: [
        { email: 'ADA@example.com', lastName: 'Lovelace', identityHash: sign(secret, 'ada@example.com') },
        { email: 'new@example.com', firstName: 'New' },
      ],
    }
    const response = await writeAsPage(service, site, batch)
    expect(response.status).toBe(200)
    const rows = await (await testDatabase()).db.select().from(people)
    expect(rows.find((row) => row.externalId === 'u-ada')!.lastName).toBe('Lovelace')
    expect(rows.find((row) => row.email === 'new@example.com')!.firstName).toBe('New')
  })

  test('a new secret replaces the old one: hashes under the old one no longer verify', async () => {
    const { service, businessId, site } = await setup()
    const first = await newSecret(service, businessId)
    const second = await newSecret(service, businessId)
    expect(second).not.toBe(first)
    await writeAsPage(service, site, { externalId: 'u-ada', firstName: 'Old', identityHash: sign(first, 'u-ada') })
    expect(await firstNames()).toEqual(['Ada'])
    await writeAsPage(service, site, { externalId: 'u-ada', firstName: 'New', identityHash: sign(second, 'u-ada') })
    expect(await firstNames()).toEqual(['New'])
  })

  test('a malformed hash is a 400 naming identityHash; an unknown business a 404', async () => {
    const { service, site } = await setup()
    const response = await writeAsPage(service, site, { externalId: 'u-ada', identityHash: 'ABC' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('identityHash')
    const unknown = await admin(service, `/businesses/${crypto.randomUUID()}/identity-secret`, { method: 'POST' })
    expect(unknown.status).toBe(404)
  })
})

describe('public-key removals from a list', () => {
  async function withMember() {
    const context = await setup()
    const list = await call(context.service, '/api/v0/audience/lists', {
      method: 'POST',
      key: context.server,
      body: { slug: 'news', name: 'News' },
    })
    expect(list.status).toBe(201)
    const added = await call(context.service, '/api/v0/audience/lists/news/people', {
      method: 'POST',
      key: context.server,
      body: { people: [{ externalId: 'u-ada' }] },
    })
    expect(added.status).toBe(200)
    return context
  }
  const members = async () =>
    (await queryRows<{ n: number }>((await testDatabase()).db, sql`select count(*)::int as n from audience_list_members`))[0]!.n
  const remove = (service: Service, site: string, ref: Record<string, string>) =>
    call(service, '/api/v0/audience/lists/news/people', { method: 'DELETE', key: site, origin: ORIGIN, body: { people: [ref] } })

  test('before the business has a secret, a public key removes as it always did', async () => {
    const { service, site } = await withMember()
    const response = await remove(service, site, { externalId: 'u-ada' })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ removed: 1 })
    expect(await members()).toBe(0)
  })

  test('once it has one, only a ref with a valid hash is removed; the answers are identical', async () => {
    const { service, businessId, site } = await withMember()
    const secret = await newSecret(service, businessId)
    const refused = await remove(service, site, { externalId: 'u-ada', identityHash: sign('wrong', 'u-ada') })
    const bare = await remove(service, site, { externalId: 'u-ada' })
    expect(await members()).toBe(1)
    const verified = await remove(service, site, { externalId: 'u-ada', identityHash: sign(secret, 'u-ada') })
    expect(await members()).toBe(0)
    const bodies = await Promise.all([refused, bare, verified].map(async (r) => [r.status, await r.json()]))
    expect(bodies).toEqual([
      [200, { removed: 1 }],
      [200, { removed: 1 }],
      [200, { removed: 1 }],
    ])
  })

  test('a ref must name one person: two identifiers are a 400', async () => {
    const { service, site } = await withMember()
    const response = await remove(service, site, { externalId: 'u-ada', email: 'ada@example.com' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('people[0]')
    expect(await members()).toBe(1)
  })
})
