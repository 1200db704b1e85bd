import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { nestsDeeperThan } from '../../src/http/json-body.ts'
import { MAX_PAGE_BYTES } from '../../src/shared/paging.ts'
import { cookieFrom, hiddenValue, KEYS, memberOf } from '../dashboard/support.ts'
import { testDatabase, testDatabaseOf, testEventsDatabase } from '../support/database.ts'
import { storedRows } from '../support/hostile.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

/** Named regressions of issue 7 item 3: each answered 500 before. test/api/fuzz.test.ts throws random input. */

const ALL_PRIVATE = [
  'ANALYTICS_READ',
  'ANALYTICS_WRITE',
  'AUDIENCE_PERSON_READ',
  'AUDIENCE_PERSON_WRITE',
  'AUDIENCE_COMPANY_READ',
  'AUDIENCE_COMPANY_WRITE',
  'AUDIENCE_LIST_READ',
  'AUDIENCE_LIST_WRITE',
  'BLOG_WRITE',
  'BLOG_READ',
  'MEMORY_READ',
  'MEMORY_WRITE',
  'FLOW_TRIGGER',
]

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const pk = await seedKey(service, businessId, { scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'], allowedOrigins: ['*'] })
  const sk = await seedKey(service, businessId, { type: 'private', scopes: ALL_PRIVATE })
  return { service, businessId, pk: pk.key, sk: sk.key }
}

async function count(table: string): Promise<number> {
  const [row] = await queryRows<{ n: number }>((await testDatabaseOf(table)).db, sql.raw(`select count(*)::int as n from ${table}`))
  return row!.n
}

/** A 400 whose message holds `words`; a quoted field name (`'"events[1].url"'`) is the error's `field` too. */
async function expect400(response: Promise<Response>, words: string) {
  const answer = await response
  expect(answer.status).toBe(400)
  const error = await errorOf(answer)
  expect(error.code).toBe('invalid_request')
  expect(error.message).toContain(words)
  const quoted = /^"(.+)"$/.exec(words)
  if (quoted) expect(error.field).toBe(quoted[1])
}

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const SOME_ID = '00000000-0000-4000-8000-000000000000'

describe('numbers out of range', () => {
  // JSON.parse reads 1e400 as Infinity, which jsonb stored as null behind a 202, and an
  // integer past 2^53 as a neighbour of it: both are refused.
  for (const [big, words] of [
    ['1e400', 'out of range'],
    ['-1e400', 'out of range'],
    ['9007199254740993', 'send it as a string'],
    ['-12345678901234567890', 'send it as a string'],
  ] as const) {
    test(`${big} anywhere a body holds a number: 400 naming the field, nothing stored`, async () => {
      const s = await setup()
      const before = await storedRows()
      const cases: [Promise<Response>, string][] = [
        [call(s.service, '/api/v0/analytics', { key: s.pk, body: `{"eventType":"x","properties":{"n":${big}}}` }), '"properties.n"'],
        [
          call(s.service, '/api/v0/analytics', {
            key: s.sk,
            body: `{"events":[{"eventType":"x"},{"eventType":"y","properties":{"a":[1,${big}]}}]}`,
          }),
          '"events[1].properties.a[1]"',
        ],
        [
          call(s.service, '/api/v0/audience/people', { key: s.sk, body: `{"email":"a@b.io","properties":{"score":${big}}}` }),
          '"properties.score"',
        ],
        [call(s.service, '/api/v0/memory', { key: s.sk, body: `{"content":"x","metadata":{"k":{"n":${big}}}}` }), '"metadata.k.n"'],
        [call(s.service, `/api/v0/flow/${SOME_ID}/trigger`, { key: s.sk, body: `{"input":{"n":${big}}}` }), '"input.n"'],
        [
          admin(s.service, `/businesses/${s.businessId}/keys`, {
            body: `{"type":"private","name":"k","scopes":["ANALYTICS_READ"],"createdBy":"ops","rateLimit":{"limit":${big},"windowSeconds":60}}`,
          }),
          '"rateLimit.limit"',
        ],
      ]
      for (const [response, field] of cases) {
        const answer = await response
        expect(answer.status, field).toBe(400)
        const error = await errorOf(answer)
        expect(error.code).toBe('invalid_request')
        expect(error.message).toContain(field)
        expect(error.message).toContain(words)
      }
      expect(await storedRows()).toBe(before)
    })
  }
})

describe('strings PostgreSQL cannot store', () => {
  const cases: [string, string, string][] = [
    ['a lone high surrogate in an event url', '{"eventType":"x","url":"\\ud800"}', '"url"'],
    [
      'a lone low surrogate deep in properties',
      '{"events":[{"eventType":"x"},{"eventType":"y","properties":{"a":["ok","\\udc00"]}}]}',
      '"events[1].properties.a[1]"',
    ],
    ['a surrogate in a property name', '{"eventType":"x","properties":{"\\ud800":1}}', '"properties"'],
    ['U+0000 in a property value', '{"eventType":"x","properties":{"note":"a\\u0000b"}}', '"properties.note"'],
  ]
  for (const [what, body, field] of cases) {
    test(`${what}: 400 naming ${field}, no event stored`, async () => {
      const s = await setup()
      await expect400(call(s.service, '/api/v0/analytics', { key: s.pk, origin: 'https://a.example', body }), field)
      expect(await count('analytics_events')).toBe(0)
    })
  }

  test('a surrogate pair (an emoji) is text like any other and is stored', async () => {
    const s = await setup()
    const response = await call(s.service, '/api/v0/analytics', { key: s.pk, body: '{"eventType":"x","url":"\\ud83d\\ude00"}' })
    expect(response.status).toBe(202)
    expect(await count('analytics_events')).toBe(1)
  })

  test('people, lists, blog and memory refuse them too, writing nothing', async () => {
    const s = await setup()
    await expect400(
      call(s.service, '/api/v0/audience/people', { key: s.sk, body: '{"email":"a@b.io","firstName":"\\udfff"}' }),
      '"firstName"',
    )
    await expect400(call(s.service, '/api/v0/audience/lists', { key: s.sk, body: '{"slug":"news","name":"N\\ud800"}' }), '"name"')
    await expect400(call(s.service, '/api/v0/blog/tags', { key: s.sk, body: '{"slug":"t","name":"\\ud800"}' }), '"name"')
    await expect400(call(s.service, '/api/v0/memory', { key: s.sk, body: '{"content":"x","metadata":{"k":"\\ud800"}}' }), '"metadata.k"')
    for (const table of ['people', 'audience_lists', 'blog_tags', 'memory_documents']) expect(await count(table)).toBe(0)
  })

  test('the admin API refuses them instead of storing U+FFFD', async () => {
    const s = await setup()
    await expect400(admin(s.service, '/businesses', { body: '{"name":"Acme\\udc00"}' }), '"name"')
    await expect400(
      admin(s.service, `/businesses/${s.businessId}/keys`, {
        body: '{"type":"private","name":"k\\u0000","scopes":["ANALYTICS_READ"],"createdBy":"ops"}',
      }),
      '"name"',
    )
    expect(await count('businesses')).toBe(1)
    expect(await count('api_keys')).toBe(2)
  })
})

describe('values Elysia cannot describe', () => {
  test('"__proto__" as a property name: 400 naming where, nothing stored', async () => {
    const s = await setup()
    const created = await call(s.service, '/api/v0/memory', { key: s.sk, body: { content: 'c' } })
    const { id } = (await created.json()) as { id: string }
    await expect400(
      call(s.service, `/api/v0/memory/${id}`, { method: 'PATCH', key: s.sk, body: '{"metadata":{"__proto__":null}}' }),
      '"metadata"',
    )
    await expect400(
      call(s.service, '/api/v0/analytics', { key: s.pk, body: '{"eventType":"x","properties":{"a":{"__proto__":{"admin":true}}}}' }),
      '"properties.a"',
    )
    expect(await count('analytics_events')).toBe(0)
  })

  test('a slug cursor holding U+0000: 400 naming cursor', async () => {
    const s = await setup()
    await expect400(call(s.service, `/api/v0/blog/tags?cursor=${cursorOf(['\u0000'])}`, { key: s.sk }), '"cursor"')
  })

  test('an object with its own toString where a string belongs: 400, not the TypeError of the error message', async () => {
    const s = await setup()
    await expect400(call(s.service, '/api/v0/audience/lists', { key: s.sk, body: '{"slug":"vip","name":{"toString":"x"}}' }), '"name"')
    await expect400(admin(s.service, '/businesses', { body: '{"name":{"toString":"x","valueOf":1}}' }), '"name"')
    expect(await count('audience_lists')).toBe(0)
    expect(await count('businesses')).toBe(1)
  })
})

describe('dates outside 1970-01-01 .. 9999-12-31', () => {
  test('analytics from=0000-01-01: 400 naming from', async () => {
    const s = await setup()
    await expect400(call(s.service, '/api/v0/analytics?from=0000-01-01T00:00:00Z', { key: s.sk }), '"from"')
  })

  test('a cursor that decodes to year +275760, or to garbage: 400 naming cursor', async () => {
    const s = await setup()
    for (const cursor of [
      cursorOf(['+275760-09-13T00:00:00.000Z', SOME_ID]),
      cursorOf(['0000-01-01T00:00:00Z', SOME_ID]),
      cursorOf({ a: 1 }),
      'AAAA',
    ]) {
      await expect400(call(s.service, `/api/v0/analytics?cursor=${cursor}`, { key: s.sk }), '"cursor"')
      await expect400(call(s.service, `/api/v0/audience/people?cursor=${cursor}`, { key: s.sk }), '"cursor"')
    }
  })

  test('a memory search cursor whose rank is no float4: 400', async () => {
    const s = await setup()
    const digest = new Bun.CryptoHasher('sha256').update('a').digest('base64url').slice(0, 12)
    for (const rank of [1e300, -1e300, 1e-50]) {
      await expect400(call(s.service, `/api/v0/memory?q=a&cursor=${cursorOf(['q', digest, rank, SOME_ID])}`, { key: s.sk }), '"cursor"')
    }
  })

  test('blog publishedAt 0000-01-01: 400 naming publishedAt, no blog', async () => {
    const s = await setup()
    const body = { slug: 'a', title: 't', content: 'c', publishedAt: '0000-01-01T00:00:00Z' }
    await expect400(call(s.service, '/api/v0/blog/blogs', { key: s.sk, body }), '"publishedAt"')
    expect(await count('blogs')).toBe(0)
  })

  test('admin key expiresAt in year +275760: 400 naming expiresAt, no key', async () => {
    const s = await setup()
    const body = { type: 'private', name: 'k', scopes: ['ANALYTICS_READ'], createdBy: 'ops', expiresAt: '+275760-09-13T00:00:00Z' }
    await expect400(admin(s.service, `/businesses/${s.businessId}/keys`, { body }), 'expiresAt')
    expect(await count('api_keys')).toBe(2)
  })
})

describe('nesting', () => {
  test('60k nested brackets (a public key takes 64 KiB), 100k objects on the admin API: 400 naming the body', async () => {
    const s = await setup()
    await expect400(call(s.service, '/api/v0/analytics', { key: s.pk, body: '['.repeat(60_000) }), 'nested more than 32 levels')
    await expect400(admin(s.service, '/businesses', { body: '{"a":'.repeat(100_000) }), 'nested more than 32 levels')
    expect(await count('analytics_events')).toBe(0)
  })

  test('the scan counts arrays and objects, not brackets inside strings', () => {
    expect(nestsDeeperThan('['.repeat(33) + ']'.repeat(33), 32)).toBe(true)
    expect(nestsDeeperThan('['.repeat(32) + ']'.repeat(32), 32)).toBe(false)
    expect(nestsDeeperThan(`{"a":"${'['.repeat(100)}"}`, 32)).toBe(false)
    expect(nestsDeeperThan(`{"a":"\\"${'{'.repeat(100)}"}`, 32)).toBe(false)
  })
})

describe('sizes', () => {
  test('properties over 16 KiB: 400 for events, people and companies; 16 KiB passes', async () => {
    const s = await setup()
    const big = { blob: 'x'.repeat(16_400) }
    await expect400(call(s.service, '/api/v0/analytics', { key: s.pk, body: { eventType: 'x', properties: big } }), '"properties"')
    await expect400(call(s.service, '/api/v0/audience/people', { key: s.pk, body: { email: 'a@b.io', properties: big } }), '"properties"')
    await expect400(call(s.service, '/api/v0/audience/companies', { key: s.sk, body: { domain: 'b.io', properties: big } }), '"properties"')
    expect(await count('analytics_events')).toBe(0)
    expect(await count('people')).toBe(0)
    expect(await count('companies')).toBe(0)
    const fits = { blob: 'x'.repeat(16_000) }
    expect((await call(s.service, '/api/v0/analytics', { key: s.pk, body: { eventType: 'x', properties: fits } })).status).toBe(202)
  })

  test('a page stops before 4 MiB and its nextCursor leads through every record once', async () => {
    const s = await setup()
    // Stored before the limit existed: 300 events of ~30 KB each, ~9 MB in all.
    const [key] = await queryRows<{ id: string }>((await testDatabase()).db, sql`select id from api_keys limit 1`)
    await (await testEventsDatabase()).db.execute(sql`
      insert into analytics_events (business_id, key_id, event_type, properties, occurred_at, received_at)
      select ${s.businessId}::uuid, ${key!.id}::uuid, 'big',
             jsonb_build_object('blob', repeat('x', 30000)), now() - make_interval(secs => g), now()
      from generate_series(1, 300) g`)
    const seen = new Set<string>()
    let cursor: string | null = null
    let pages = 0
    do {
      const response = await call(s.service, `/api/v0/analytics?limit=1000${cursor ? `&cursor=${cursor}` : ''}`, { key: s.sk })
      expect(response.status).toBe(200)
      const text = await response.text()
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_PAGE_BYTES)
      const page = JSON.parse(text) as { data: { id: string }[]; nextCursor: string | null }
      for (const event of page.data) seen.add(event.id)
      cursor = page.nextCursor
      pages++
    } while (cursor !== null)
    expect(seen.size).toBe(300)
    expect(pages).toBe(3)
  })
})

describe('dashboard sign-in', () => {
  test('an email holding U+0000: 400 with the form again, no failure counted, no session', async () => {
    const service = await testService()
    await memberOf(service)
    const page = await call(service, '/dashboard/sign-in')
    const csrf = hiddenValue(await page.text(), 'csrf')
    const response = await call(service, '/dashboard/sign-in', {
      method: 'POST',
      body: `csrf=${csrf}&email=ada%00%40example.com&password=whatever`,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://localhost',
        cookie: cookieFrom(page, 'keygate_sign_in')!,
      },
    })
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('holds a character no address has')
    expect(cookieFrom(response, 'keygate_session')).toBeNull()
    expect(await count('sign_in_failures')).toBe(0)
  })
})

describe('dashboard next=', () => {
  const cases: [string, string][] = [
    ['/dashboard/%E2%82%AC', '/dashboard/%E2%82%AC'],
    [`${KEYS}?x=%E2%82%AC`, `${KEYS}?x=%E2%82%AC`],
    ['/dashboard/../admin/v0/businesses', KEYS],
    ['https://evil.example/dashboard/', KEYS],
    ['/dashboard/%ED%A0%80', '/dashboard/%ED%A0%80'],
  ]
  for (const [next, location] of cases) {
    test(`signed in, next=${next} redirects to ${location}`, async () => {
      const service = await testService()
      const { session } = await memberOf(service)
      const response = await call(service, `/dashboard/sign-in?next=${encodeURIComponent(next)}`, { headers: { cookie: session.cookie } })
      expect(response.status).toBe(303)
      expect(response.headers.get('location')).toBe(location)
    })
  }
})
