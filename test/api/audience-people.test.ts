import { describe, expect, test } from 'bun:test'
import { asc, sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { audienceListMembers, audienceLists, people } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

const ORIGIN = 'https://example.com'
const PRIVATE_SCOPES = ['AUDIENCE_PERSON_WRITE', 'AUDIENCE_PERSON_READ']

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const pk = (await seedKey(service, businessId, { scopes: ['AUDIENCE_PERSON_WRITE'] })).key
  const sk = (await seedKey(service, businessId, { type: 'private', scopes: PRIVATE_SCOPES })).key
  return { service, businessId, pk, sk }
}

type Setup = Awaited<ReturnType<typeof setup>>

function upsert(s: Setup, body: unknown, key = s.sk) {
  return call(s.service, '/api/v0/audience/people', { method: 'POST', key, origin: key === s.pk ? ORIGIN : undefined, body })
}

async function storedPeople() {
  const { db } = await testDatabase()
  return db.select().from(people).orderBy(asc(people.createdAt), asc(people.email))
}

async function countPeople(): Promise<number> {
  const [row] = await queryRows<{ n: number }>((await testDatabase()).db, sql`select count(*)::int as n from people`)
  return row!.n
}

describe('POST /api/v0/audience/people', () => {
  test('a public key creates a person and gets only the count back', async () => {
    const s = await setup()
    const response = await upsert(s, { email: 'Ada@Example.com', firstName: 'Ada', properties: { plan: 'free' } }, s.pk)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ upserted: 1 })
    expect(await storedPeople()).toMatchObject([
      { businessId: s.businessId, email: 'Ada@Example.com', externalId: null, firstName: 'Ada', properties: { plan: 'free' } },
    ])
  })

  test('a public key batch answer carries the count only', async () => {
    const s = await setup()
    const response = await upsert(s, { people: [{ email: 'a@x.com' }, { externalId: 'u2' }] }, s.pk)
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(Object.keys(body)).toEqual(['upserted'])
    expect(body.upserted).toBe(2)
  })

  test('a private key gets the people written, in request order', async () => {
    const s = await setup()
    const response = await upsert(s, { people: [{ externalId: 'u1', lastName: 'Lovelace' }, { email: 'b@x.com' }] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.upserted).toBe(2)
    expect(body.data).toMatchObject([
      { externalId: 'u1', lastName: 'Lovelace', email: null },
      { externalId: null, email: 'b@x.com' },
    ])
    const stored = await storedPeople()
    expect(body.data.map((p: { id: string }) => p.id).sort()).toEqual(stored.map((p) => p.id).sort())
  })

  test('matches on externalId: fields sent replace, fields left out stay, properties merge', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'u1', firstName: 'Ada', lastName: 'Byron', properties: { plan: 'free', team: 'a' } })
    const response = await upsert(s, { externalId: 'u1', lastName: 'Lovelace', properties: { plan: 'pro' } })
    expect((await response.json()).upserted).toBe(1)
    expect(await storedPeople()).toMatchObject([
      { externalId: 'u1', firstName: 'Ada', lastName: 'Lovelace', properties: { plan: 'pro', team: 'a' } },
    ])
  })

  test('matches on email case-insensitively when no externalId is sent', async () => {
    const s = await setup()
    await upsert(s, { email: 'Ada@Example.com' })
    await upsert(s, { email: 'ada@EXAMPLE.com', firstName: 'Ada' })
    const stored = await storedPeople()
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({ email: 'ada@EXAMPLE.com', firstName: 'Ada' })
  })

  test('an unknown externalId with the email of a person without one claims that person', async () => {
    const s = await setup()
    await upsert(s, { email: 'ada@example.com', firstName: 'Ada' }, s.pk)
    await upsert(s, { externalId: 'u1', email: 'ADA@example.com' })
    expect(await storedPeople()).toMatchObject([{ externalId: 'u1', email: 'ADA@example.com', firstName: 'Ada' }])
  })

  test('an email held by a person with another externalId is a 409 conflict, and nothing of the batch is written', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'u1', email: 'ada@example.com' })
    const response = await upsert(s, { people: [{ email: 'new@x.com' }, { externalId: 'u2', email: 'Ada@example.com' }] })
    expect(response.status).toBe(409)
    const error = await errorOf(response)
    expect(error.code).toBe('conflict')
    expect(error.message).toStartWith('Body field "people[1].email": another person with a different externalId already has the email')
    expect(await storedPeople()).toMatchObject([{ externalId: 'u1', email: 'ada@example.com' }])
  })

  test('moving an email onto a person when another person holds it is a 409 conflict', async () => {
    const s = await setup()
    await upsert(s, { people: [{ externalId: 'u1', email: 'one@x.com' }, { email: 'two@x.com' }] })
    const response = await upsert(s, { externalId: 'u1', email: 'two@x.com' })
    expect(response.status).toBe(409)
    expect((await storedPeople()).map((p) => p.email).sort()).toEqual(['one@x.com', 'two@x.com'])
  })

  test('records naming the same person in one batch: the last one wins', async () => {
    const s = await setup()
    const response = await upsert(s, {
      people: [
        { externalId: 'u1', firstName: 'First', email: 'first@x.com' },
        { email: 'c@x.com', firstName: 'C1' },
        { externalId: 'u1', firstName: 'Last' },
        { email: 'C@X.com', firstName: 'C2' },
      ],
    })
    expect(response.status).toBe(200)
    expect((await response.json()).upserted).toBe(2)
    const stored = await storedPeople()
    expect(stored).toHaveLength(2)
    expect(stored.find((p) => p.externalId === 'u1')).toMatchObject({ firstName: 'Last', email: null })
    expect(stored.find((p) => p.externalId === null)).toMatchObject({ email: 'C@X.com', firstName: 'C2' })
  })

  test('two records reaching one stored person through different keys: the last one wins', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'u1', email: 'ada@x.com' })
    const response = await upsert(s, {
      people: [
        { externalId: 'u1', firstName: 'ById' },
        { email: 'ada@x.com', firstName: 'ByEmail' },
      ],
    })
    expect((await response.json()).upserted).toBe(1)
    expect(await storedPeople()).toMatchObject([{ externalId: 'u1', firstName: 'ByEmail' }])
  })

  test('two records with one email but different match keys are refused, naming the later one', async () => {
    const s = await setup()
    const response = await upsert(s, {
      people: [
        { externalId: 'u1', email: 'a@x.com' },
        { externalId: 'u2', email: 'A@x.com' },
      ],
    })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith('Invalid body field "people[1].email": people[0] has the same email')
    expect(await countPeople()).toBe(0)
  })

  test('a record with neither externalId nor email is refused, naming its index', async () => {
    const s = await setup()
    const response = await upsert(s, { people: [{ email: 'a@x.com' }, { email: 'b@x.com' }, { firstName: 'Nobody' }] })
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toMatchObject({
      code: 'invalid_request',
      message: 'Invalid body field "people[2]": give "externalId" or "email" (or both) to say which person to create or update.',
    })
    expect(await countPeople()).toBe(0)
  })

  test('a single record with neither key is refused', async () => {
    const s = await setup()
    const response = await upsert(s, { firstName: 'Nobody' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toBe(
      'Invalid body: give "externalId" or "email" (or both) to say which person to create or update.',
    )
  })

  test.each([
    ['email', { email: 'not-an-email' }],
    ['email', { email: `${'a'.repeat(250)}@x.com` }],
    ['externalId', { externalId: 'x'.repeat(201) }],
    ['firstName', { email: 'a@b.co', firstName: 'f'.repeat(201) }],
    ['lastName', { email: 'a@b.co', lastName: 42 }],
    ['properties', { email: 'a@b.co', properties: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }],
    ['firstName', { email: 'a@b.co', firstName: 'A\u0000da' }],
  ])('a bad %s anywhere in a batch refuses the batch', async (field, bad) => {
    const s = await setup()
    const batch = [{ email: 'ok1@x.com' }, { email: 'ok2@x.com' }, { email: 'ok3@x.com' }, bad]
    const response = await upsert(s, { people: batch })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith(`Invalid body field "people[3].${field}": `)
    expect(await countPeople()).toBe(0)
  })

  test('an unknown field is refused naming it, with the field meant, and nothing is written', async () => {
    const s = await setup()
    for (const key of [s.pk, s.sk]) {
      const response = await upsert(s, { email: 'ada@example.com', fistName: 'Ada' }, key)
      expect(response.status).toBe(400)
      expect(await errorOf(response)).toMatchObject({
        code: 'invalid_request',
        message: 'Unknown body field "fistName"; did you mean "firstName"?',
      })
    }
    const batch = [{ email: 'ok1@x.com' }, { email: 'ok2@x.com' }, { email: 'ok3@x.com' }, { email: 'ada@example.com', fistName: 'Ada' }]
    const response = await upsert(s, { people: batch })
    expect((await errorOf(response)).message).toBe('Unknown body field "people[3].fistName"; did you mean "firstName"?')
    const typo = await upsert(s, { peple: batch })
    expect((await errorOf(typo)).message).toBe('Unknown body field "peple"; did you mean "people"?')
    expect(await countPeople()).toBe(0)
  })

  test('more than 1000 records, or none, are refused', async () => {
    const s = await setup()
    const tooMany = await upsert(s, { people: Array.from({ length: 1001 }, (_, i) => ({ email: `p${i}@x.com` })) })
    expect(tooMany.status).toBe(400)
    expect((await errorOf(tooMany)).message).toStartWith('Invalid body field "people": ')
    expect((await upsert(s, { people: [] })).status).toBe(400)
    expect(await countPeople()).toBe(0)
  })

  test('a batch of 1000 is written', async () => {
    const s = await setup()
    const response = await upsert(
      s,
      { people: Array.from({ length: 1000 }, (_, i) => ({ email: `p${i}@x.com`, externalId: `u${i}` })) },
      s.pk,
    )
    expect(await response.json()).toEqual({ upserted: 1000 })
    expect(await countPeople()).toBe(1000)
  })

  test('concurrent upserts of one new email make one person', async () => {
    const s = await setup()
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upsert(s, { email: 'race@x.com', properties: { [`k${i}`]: i } })),
    )
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(200))
    const stored = await storedPeople()
    expect(stored).toHaveLength(1)
    expect(Object.keys(stored[0]!.properties).length).toBe(8)
  })

  test("concurrent public upserts of one new email make one person, with one request's fields", async () => {
    const s = await setup()
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upsert(s, { email: 'race@x.com', properties: { [`k${i}`]: i } }, s.pk)),
    )
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(200))
    const stored = await storedPeople()
    expect(stored).toHaveLength(1)
    expect(Object.keys(stored[0]!.properties)).toHaveLength(1)
  })

  test('without a key: 401, nothing written', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/people', { body: { email: 'a@x.com' } })
    expect(response.status).toBe(401)
    expect(await countPeople()).toBe(0)
  })

  test('a public key from another origin: 403 origin_not_allowed, nothing written', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/people', {
      key: s.pk,
      origin: 'https://example.org',
      body: { email: 'a@x.com' },
    })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('origin_not_allowed')
    expect(await countPeople()).toBe(0)
  })

  test('a key without AUDIENCE_PERSON_WRITE: 403 insufficient_scope, nothing written', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { scopes: ['ANALYTICS_WRITE'] })
    const response = await call(s.service, '/api/v0/audience/people', { key, origin: ORIGIN, body: { email: 'a@x.com' } })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
    expect(await countPeople()).toBe(0)
  })

  test("the same externalId in two businesses is two people; neither upsert touches the other's", async () => {
    const s = await setup()
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    await upsert(s, { externalId: 'u1', email: 'a@x.com', firstName: 'Mine' })
    await upsert(s, { externalId: 'u1', email: 'a@x.com', firstName: 'Theirs' }, otherKey)
    const stored = await storedPeople()
    expect(stored).toHaveLength(2)
    expect(stored.find((p) => p.businessId === s.businessId)!.firstName).toBe('Mine')
  })
})

describe('GET /api/v0/audience/people', () => {
  test('pages through people newest first', async () => {
    const s = await setup()
    // Times are kept to the millisecond: distinct ones make "newest first" exact.
    for (let i = 0; i < 5; i++) {
      await upsert(s, { externalId: `u${i}` })
      await Bun.sleep(3)
    }
    const first = await (await call(s.service, '/api/v0/audience/people?limit=2', { key: s.sk })).json()
    expect(first.data.map((p: { externalId: string }) => p.externalId)).toEqual(['u4', 'u3'])
    const second = await (await call(s.service, `/api/v0/audience/people?limit=2&cursor=${first.nextCursor}`, { key: s.sk })).json()
    const third = await (await call(s.service, `/api/v0/audience/people?limit=2&cursor=${second.nextCursor}`, { key: s.sk })).json()
    expect([...second.data, ...third.data].map((p: { externalId: string }) => p.externalId)).toEqual(['u2', 'u1', 'u0'])
    expect(third.nextCursor).toBeNull()
  })

  test('filters by email in any case, and by externalId', async () => {
    const s = await setup()
    await upsert(s, { people: [{ email: 'Ada@x.com' }, { email: 'bob@x.com', externalId: 'b' }] })
    const byEmail = await (await call(s.service, '/api/v0/audience/people?email=ADA%40X.COM', { key: s.sk })).json()
    expect(byEmail.data.map((p: { email: string }) => p.email)).toEqual(['Ada@x.com'])
    const byExternal = await (await call(s.service, '/api/v0/audience/people?externalId=b', { key: s.sk })).json()
    expect(byExternal.data.map((p: { email: string }) => p.email)).toEqual(['bob@x.com'])
  })

  test("lists only the key's business", async () => {
    const s = await setup()
    await upsert(s, { email: 'a@x.com' })
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    const response = await call(s.service, '/api/v0/audience/people', { key: otherKey })
    expect(await response.json()).toEqual({ data: [], nextCursor: null })
  })

  test('a public key: 403 public_key_not_allowed', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { scopes: ['AUDIENCE_PERSON_WRITE'] })
    const response = await call(s.service, '/api/v0/audience/people', { key, origin: ORIGIN })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('public_key_not_allowed')
  })

  test('a private key without AUDIENCE_PERSON_READ: 403 insufficient_scope', async () => {
    const s = await setup()
    const { key } = await seedKey(s.service, s.businessId, { type: 'private', scopes: ['AUDIENCE_PERSON_WRITE'] })
    const response = await call(s.service, '/api/v0/audience/people', { key })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
  })

  test.each([
    ['email', '?email=a%00b%40x.com'],
    ['email', '?email=not-an-email'],
    ['externalId', '?externalId=u%001'],
  ])('a bad %s filter answers 400 naming it (never reaches the database)', async (field, query) => {
    const s = await setup()
    const response = await call(s.service, `/api/v0/audience/people${query}`, { key: s.sk })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toStartWith(`Invalid query field "${field}": `)
  })

  test('a bad limit answers 400 naming it', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/people?limit=5000', { key: s.sk })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toBe('Invalid query field "limit": must be a whole number from 1 to 1000.')
  })
})

describe('GET /api/v0/audience/people/:id', () => {
  test('shows a person', async () => {
    const s = await setup()
    const created = await (await upsert(s, { externalId: 'u1', email: 'a@x.com', firstName: 'Ada' })).json()
    const id = created.data[0].id
    const response = await call(s.service, `/api/v0/audience/people/${id}`, { key: s.sk })
    expect(response.status).toBe(200)
    const person = await response.json()
    expect(person).toMatchObject({ id, externalId: 'u1', email: 'a@x.com', firstName: 'Ada', lastName: null, properties: {} })
    expect(Object.keys(person).sort()).toEqual(
      ['createdAt', 'email', 'externalId', 'firstName', 'id', 'lastName', 'properties', 'updatedAt'].sort(),
    )
  })

  test("another business's person: 404", async () => {
    const s = await setup()
    const id = (await (await upsert(s, { email: 'a@x.com' })).json()).data[0].id
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    const response = await call(s.service, `/api/v0/audience/people/${id}`, { key: otherKey })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('not_found')
  })

  test('an id that is not a UUID: 400 naming it', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/audience/people/123', { key: s.sk })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toBe('Invalid params field "id": must be a UUID.')
  })

  test('a public key: 403 public_key_not_allowed', async () => {
    const s = await setup()
    const response = await call(s.service, `/api/v0/audience/people/${crypto.randomUUID()}`, { key: s.pk, origin: ORIGIN })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('public_key_not_allowed')
  })
})

describe('DELETE /api/v0/audience/people/:id', () => {
  async function personOnList(s: Setup) {
    const id: string = (await (await upsert(s, { email: 'a@x.com' })).json()).data[0].id
    const { db } = await testDatabase()
    const [list] = await db.insert(audienceLists).values({ businessId: s.businessId, slug: 'news', name: 'News' }).returning()
    await db.insert(audienceListMembers).values({ listId: list!.id, personId: id })
    return id
  }

  test('deletes the person and their memberships: 204', async () => {
    const s = await setup()
    const id = await personOnList(s)
    const response = await call(s.service, `/api/v0/audience/people/${id}`, { method: 'DELETE', key: s.sk })
    expect(response.status).toBe(204)
    expect(await response.text()).toBe('')
    expect(await countPeople()).toBe(0)
    expect(await (await testDatabase()).db.select().from(audienceListMembers)).toEqual([])
  })

  test("another business's person: 404, nothing deleted", async () => {
    const s = await setup()
    const id = await personOnList(s)
    const other = await seedBusiness(s.service, 'Other')
    const otherKey = (await seedKey(s.service, other, { type: 'private', scopes: PRIVATE_SCOPES })).key
    const response = await call(s.service, `/api/v0/audience/people/${id}`, { method: 'DELETE', key: otherKey })
    expect(response.status).toBe(404)
    expect(await countPeople()).toBe(1)
  })

  test('a public key, even with AUDIENCE_PERSON_WRITE: 403 public_key_not_allowed, nothing deleted', async () => {
    const s = await setup()
    const id = await personOnList(s)
    const response = await call(s.service, `/api/v0/audience/people/${id}`, { method: 'DELETE', key: s.pk, origin: ORIGIN })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('public_key_not_allowed')
    expect(await countPeople()).toBe(1)
  })

  test('a private key with only AUDIENCE_PERSON_READ: 403 insufficient_scope, nothing deleted', async () => {
    const s = await setup()
    const id = await personOnList(s)
    const { key } = await seedKey(s.service, s.businessId, { type: 'private', scopes: ['AUDIENCE_PERSON_READ'] })
    const response = await call(s.service, `/api/v0/audience/people/${id}`, { method: 'DELETE', key })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('insufficient_scope')
    expect(await countPeople()).toBe(1)
  })
})

// A public key creates people who do not exist and changes nothing
// stored; its answers are the same whether or not a person exists.
describe('public keys write people without reading or rewriting them', () => {
  test("copying a page's key to rewrite someone's email changes nothing, and answers as a fresh create does", async () => {
    const s = await setup()
    await upsert(s, { externalId: 'b-ext-1', email: 'bob@example.com', firstName: 'Bob', properties: { plan: 'pro' } })
    const attack = await upsert(
      s,
      { externalId: 'b-ext-1', email: 'attacker@evil.com', firstName: 'Mallory', properties: { plan: 'free' } },
      s.pk,
    )
    const fresh = await upsert(s, { externalId: 'new-ext', email: 'new@example.com' }, s.pk)
    expect(attack.status).toBe(fresh.status)
    expect(await attack.json()).toEqual(await fresh.json())
    const bob = (await storedPeople()).find((p) => p.externalId === 'b-ext-1')!
    expect(bob).toMatchObject({ email: 'bob@example.com', firstName: 'Bob', properties: { plan: 'pro' } })
    expect((await storedPeople()).map((p) => p.email).sort()).toEqual(['bob@example.com', 'new@example.com'])
  })

  test('an email bound to another externalId is no 409 for a public key: same answer, nothing re-keyed', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'u1', email: 'taken@example.com' })
    const probe = await upsert(s, { externalId: 'u2', email: 'taken@example.com' }, s.pk)
    const control = await upsert(s, { externalId: 'u3', email: 'free@example.com' }, s.pk)
    expect(probe.status).toBe(200)
    expect(await probe.json()).toEqual(await control.json())
    const stored = await storedPeople()
    expect(stored.find((p) => p.email === 'taken@example.com')!.externalId).toBe('u1')
    expect(stored.find((p) => p.externalId === 'u2')).toBeUndefined()
  })

  test('an email-only person is not claimed by a public key sending an externalId', async () => {
    const s = await setup()
    await upsert(s, { email: 'anon@example.com' })
    expect((await upsert(s, { externalId: 'x-9', email: 'anon@example.com' }, s.pk)).status).toBe(200)
    expect((await storedPeople()).map((p) => [p.email, p.externalId])).toEqual([['anon@example.com', null]])
  })

  test('a batch counts the records processed, whatever each changed', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'u1', email: 'a@example.com' })
    const answer = await upsert(
      s,
      { people: [{ externalId: 'u1', firstName: 'X' }, { email: 'b@example.com' }, { email: 'a@example.com' }] },
      s.pk,
    )
    expect(await answer.json()).toEqual({ upserted: 3 })
    expect((await storedPeople()).map((p) => p.email).sort()).toEqual(['a@example.com', 'b@example.com'])
  })

  test('private keys still update and re-key freely', async () => {
    const s = await setup()
    await upsert(s, { externalId: 'b-ext-1', email: 'bob@example.com' })
    const answer = await upsert(s, { externalId: 'b-ext-1', email: 'robert@example.com', firstName: 'Robert' })
    expect(answer.status).toBe(200)
    expect((await storedPeople())[0]).toMatchObject({ email: 'robert@example.com', firstName: 'Robert' })
  })
})
