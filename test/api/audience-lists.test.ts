import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

const ORIGIN = 'https://example.com'
const PRIVATE_SCOPES = ['AUDIENCE_LIST_WRITE', 'AUDIENCE_LIST_READ', 'AUDIENCE_PERSON_WRITE']

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const pk = (await seedKey(service, businessId, { scopes: ['AUDIENCE_LIST_WRITE'] })).key
  const sk = (await seedKey(service, businessId, { type: 'private', scopes: PRIVATE_SCOPES })).key
  return { service, businessId, pk, sk }
}

type Setup = Awaited<ReturnType<typeof setup>>

function createList(s: Setup, body: unknown, key = s.sk) {
  return call(s.service, '/api/v0/audience/lists', { method: 'POST', key, body })
}

function members(s: Setup, method: 'POST' | 'DELETE', slug: string, body: unknown, key = s.pk) {
  return call(s.service, `/api/v0/audience/lists/${slug}/people`, { method, key, origin: ORIGIN, body })
}

async function upsertPerson(s: Setup, person: Record<string, unknown>): Promise<string> {
  const response = await call(s.service, '/api/v0/audience/people', { method: 'POST', key: s.sk, body: person })
  return (await response.json()).data[0].id
}

async function counts() {
  const [row] = await queryRows<{ people: number; lists: number; members: number }>(
    (await testDatabase()).db,
    sql`select (select count(*)::int from people) as people,
               (select count(*)::int from audience_lists) as lists,
               (select count(*)::int from audience_list_members) as members`,
  )
  return row!
}

async function memberEmails(slug: string): Promise<string[]> {
  const rows = await queryRows<{ email: string }>(
    (await testDatabase()).db,
    sql`select p.email from audience_list_members m join audience_lists l on l.id = m.list_id
        join people p on p.id = m.person_id where l.slug = ${slug} order by p.email`,
  )
  return rows.map((r) => r.email)
}

describe('POST /api/v0/audience/lists', () => {
  test('creates a list: 201 with the record', async () => {
    const s = await setup()
    const response = await createList(s, { slug: 'newsletter', name: 'Newsletter', description: 'Monthly news' })
    expect(response.status).toBe(201)
    const list = await response.json()
    expect(list).toMatchObject({ slug: 'newsletter', name: 'Newsletter', description: 'Monthly news', memberCount: 0 })
    expect(Object.keys(list).sort()).toEqual(['createdAt', 'description', 'id', 'memberCount', 'name', 'slug', 'updatedAt'])
    expect((await counts()).lists).toBe(1)
  })

  test('a slug already used in the business: 409 conflict', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const response = await createList(s, { slug: 'news', name: 'Other news' })
    expect(response.status).toBe(409)
    expect(await errorOf(response)).toMatchObject({ code: 'conflict' })
    expect((await counts()).lists).toBe(1)
  })

  test('the same slug in another business is another list', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    expect((await createList(s, { slug: 'news', name: 'News' }, otherKey)).status).toBe(201)
    expect((await counts()).lists).toBe(2)
  })

  test.each([
    ['slug', { slug: 'News Letter', name: 'x' }],
    ['slug', { slug: 'x'.repeat(65), name: 'x' }],
    ['name', { slug: 'ok', name: '' }],
    ['description', { slug: 'ok', name: 'x', description: 'd'.repeat(1001) }],
  ])('a bad %s: 400 naming it, nothing created', async (field, body) => {
    const s = await setup()
    const response = await createList(s, body)
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith(`Invalid body field "${field}": `)
    expect((await counts()).lists).toBe(0)
  })
})

describe('GET /api/v0/audience/lists and /lists/:slug', () => {
  test('lists the business lists newest first with member counts, in pages', async () => {
    const s = await setup()
    // Creation times are kept to the millisecond: distinct ones make "newest first" exact.
    for (const slug of ['one', 'two', 'three']) {
      await createList(s, { slug, name: slug })
      await Bun.sleep(3)
    }
    await members(s, 'POST', 'two', { people: [{ email: 'a@x.com' }, { email: 'b@x.com' }] })
    const first = await (await call(s.service, '/api/v0/audience/lists?limit=2', { key: s.sk })).json()
    expect(first.data.map((l: { slug: string; memberCount: number }) => [l.slug, l.memberCount])).toEqual([
      ['three', 0],
      ['two', 2],
    ])
    const second = await (await call(s.service, `/api/v0/audience/lists?cursor=${first.nextCursor}`, { key: s.sk })).json()
    expect(second).toMatchObject({ data: [{ slug: 'one' }], nextCursor: null })
  })

  test('shows one list by slug', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }] })
    const response = await call(s.service, '/api/v0/audience/lists/news', { key: s.sk })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ slug: 'news', name: 'News', memberCount: 1 })
  })

  test("another business's slug: 404 list_not_found", async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    const response = await call(s.service, '/api/v0/audience/lists/news', { key: otherKey })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('list_not_found')
    expect(await (await call(s.service, '/api/v0/audience/lists', { key: otherKey })).json()).toEqual({ data: [], nextCursor: null })
  })

  test('a slug outside [a-z0-9-]: 400 naming it', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/lists/News_Letter', { key: s.sk })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid params field "slug": ')
  })
})

describe('GET /api/v0/audience/lists/:slug/people', () => {
  test('pages through members, most recently added first', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    for (const email of ['a@x.com', 'b@x.com', 'c@x.com']) await members(s, 'POST', 'news', { people: [{ email }] })
    const first = await (await call(s.service, '/api/v0/audience/lists/news/people?limit=2', { key: s.sk })).json()
    expect(first.data.map((p: { email: string }) => p.email)).toEqual(['c@x.com', 'b@x.com'])
    expect(first.data[0]).toHaveProperty('addedAt')
    const second = await (
      await call(s.service, `/api/v0/audience/lists/news/people?limit=2&cursor=${first.nextCursor}`, { key: s.sk })
    ).json()
    expect(second).toMatchObject({ data: [{ email: 'a@x.com' }], nextCursor: null })
  })

  test('an unknown slug: 404 list_not_found', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/lists/nope/people', { key: s.sk })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('list_not_found')
  })
})

describe('POST /api/v0/audience/lists/:slug/people', () => {
  test('adding by email creates the person; a public key gets only the count', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const response = await members(s, 'POST', 'news', { people: [{ email: 'Ada@x.com' }] })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ added: 1 })
    expect(await memberEmails('news')).toEqual(['Ada@x.com'])
    expect((await counts()).people).toBe(1)
  })

  test('adds existing people by email (any case), externalId and id', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await upsertPerson(s, { email: 'a@x.com' })
    await upsertPerson(s, { externalId: 'u2', email: 'b@x.com' })
    const id = await upsertPerson(s, { email: 'c@x.com' })
    const response = await members(s, 'POST', 'news', { people: [{ email: 'A@X.com' }, { externalId: 'u2' }, { id }] })
    expect(await response.json()).toEqual({ added: 3 })
    expect(await memberEmails('news')).toEqual(['a@x.com', 'b@x.com', 'c@x.com'])
    expect((await counts()).people).toBe(3)
  })

  test("adding twice keeps one membership; a private key's added counts new memberships only", async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    expect(await (await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }] }, s.sk)).json()).toEqual({ added: 1 })
    const again = await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }, { email: 'A@x.com' }, { email: 'b@x.com' }] }, s.sk)
    expect(await again.json()).toEqual({ added: 1 })
    expect(await memberEmails('news')).toEqual(['a@x.com', 'b@x.com'])
    expect((await counts()).people).toBe(2)
  })

  test('a private key, an externalId that names nobody: 404, and nothing is added or created', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const response = await members(s, 'POST', 'news', { people: [{ email: 'new@x.com' }, { externalId: 'ghost' }] }, s.sk)
    expect(response.status).toBe(404)
    expect(await errorOf(response)).toMatchObject({
      code: 'not_found',
      message:
        'Body field "people[1]": no person with externalId "ghost" in this business, so nothing was added. Add them by email (which creates the person), or upsert them first.',
    })
    expect(await counts()).toEqual({ people: 0, lists: 1, members: 0 })
  })

  test("a private key, another business's person id: 404, nothing added", async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    const theirs = (await (await call(s.service, '/api/v0/audience/people', { key: otherKey, body: { email: 'z@x.com' } })).json()).data[0]
      .id
    const response = await members(s, 'POST', 'news', { people: [{ id: theirs }] }, s.sk)
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('not_found')
    expect((await counts()).members).toBe(0)
  })

  test("another business's list: 404 list_not_found, and no person is created", async () => {
    const s = await setup()
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    await createList(s, { slug: 'theirs', name: 'Theirs' }, otherKey)
    const response = await members(s, 'POST', 'theirs', { people: [{ email: 'a@x.com' }] })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('list_not_found')
    expect(await counts()).toEqual({ people: 0, lists: 1, members: 0 })
  })

  test.each([
    ['people[1]', { people: [{ email: 'a@x.com' }, { email: 'b@x.com', externalId: 'u1' }] }],
    ['people[1]', { people: [{ email: 'a@x.com' }, {}] }],
    ['people[2].email', { people: [{ email: 'a@x.com' }, { email: 'b@x.com' }, { email: 'nope' }] }],
    ['people[0].id', { people: [{ id: 'not-a-uuid' }] }],
    ['people', { people: [] }],
    ['people', { people: Array.from({ length: 1001 }, (_, i) => ({ email: `p${i}@x.com` })) }],
  ])('an invalid body: 400 naming %s, nothing added', async (field, body) => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const response = await members(s, 'POST', 'news', body)
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith(`Invalid body field "${field}": `)
    expect(await counts()).toEqual({ people: 0, lists: 1, members: 0 })
  })

  test('concurrent adds of one new email make one person and one membership', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    const responses = await Promise.all(Array.from({ length: 6 }, () => members(s, 'POST', 'news', { people: [{ email: 'race@x.com' }] })))
    expect(responses.map((r) => r.status)).toEqual(Array(6).fill(200))
    // A public key's answer counts refs processed: each says 1, whoever created the membership.
    expect(await Promise.all(responses.map(async (r) => (await r.json()).added))).toEqual(Array(6).fill(1))
    expect(await counts()).toEqual({ people: 1, lists: 1, members: 1 })
  })
})

describe('public keys learn nothing about people from list answers', () => {
  test('adding a ref that names nobody is skipped, and the answer is the same as for one that exists', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await upsertPerson(s, { externalId: 'known', email: 'k@x.com' })
    const known = await members(s, 'POST', 'news', { people: [{ externalId: 'known' }] })
    const ghost = await members(s, 'POST', 'news', { people: [{ externalId: 'ghost' }] })
    const again = await members(s, 'POST', 'news', { people: [{ externalId: 'known' }] })
    for (const answer of [known, ghost, again]) {
      expect(answer.status).toBe(200)
      expect(await answer.json()).toEqual({ added: 1 })
    }
    expect(await memberEmails('news')).toEqual(['k@x.com'])
    expect(await counts()).toEqual({ people: 1, lists: 1, members: 1 })
  })

  test('removing answers the refs processed, whether or not they were members', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }] })
    const member = await members(s, 'DELETE', 'news', { people: [{ email: 'a@x.com' }] })
    const stranger = await members(s, 'DELETE', 'news', { people: [{ email: 'nobody@x.com' }] })
    expect(await member.json()).toEqual({ removed: 1 })
    expect(await stranger.json()).toEqual({ removed: 1 })
    expect((await counts()).members).toBe(0)
  })
})

describe('DELETE /api/v0/audience/lists/:slug/people', () => {
  test('removes members by email, externalId and id; removed counts memberships removed', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await upsertPerson(s, { externalId: 'u2', email: 'b@x.com' })
    const id = await upsertPerson(s, { email: 'c@x.com' })
    await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }, { email: 'b@x.com' }, { email: 'c@x.com' }, { email: 'd@x.com' }] })
    const response = await members(s, 'DELETE', 'news', { people: [{ email: 'A@x.com' }, { externalId: 'u2' }, { id }] })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ removed: 3 })
    expect(await memberEmails('news')).toEqual(['d@x.com'])
    expect((await counts()).people).toBe(4)
  })

  test('is idempotent: people not on the list, or named by nobody, remove nothing', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }] })
    await members(s, 'DELETE', 'news', { people: [{ email: 'a@x.com' }] })
    const again = await members(
      s,
      'DELETE',
      'news',
      {
        people: [{ email: 'a@x.com' }, { externalId: 'ghost' }, { id: crypto.randomUUID() }],
      },
      s.sk,
    )
    expect(again.status).toBe(200)
    expect(await again.json()).toEqual({ removed: 0 })
    expect((await counts()).people).toBe(1)
  })

  test("another business's list: 404 list_not_found, nothing removed", async () => {
    const s = await setup()
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    await createList(s, { slug: 'theirs', name: 'Theirs' }, otherKey)
    await call(s.service, '/api/v0/audience/lists/theirs/people', {
      method: 'POST',
      key: otherKey,
      body: { people: [{ email: 'a@x.com' }] },
    })
    const response = await members(s, 'DELETE', 'theirs', { people: [{ email: 'a@x.com' }] })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('list_not_found')
    expect((await counts()).members).toBe(1)
  })

  test('an invalid body: 400 naming the field, nothing removed', async () => {
    const s = await setup()
    await createList(s, { slug: 'news', name: 'News' })
    await members(s, 'POST', 'news', { people: [{ email: 'a@x.com' }] })
    const response = await members(s, 'DELETE', 'news', { people: [{ email: 'a@x.com' }, { email: 'bad' }] })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid body field "people[1].email": ')
    expect((await counts()).members).toBe(1)
  })
})
