import { describe, expect, test } from 'bun:test'
import { hasCodePointsWithin, codePointLength } from '../../src/shared/characters.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// A limit on characters counts code points (docs/limits.md): 200 emoji fill a 1-200
// character field, 201 overflow it. Each emoji is two UTF-16 units, which TypeBox's
// minLength/maxLength counted (101 emoji were refused as 202 characters).

const EMOJI = '\u{1F600}'
const emoji = (n: number) => EMOJI.repeat(n)

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const sk = await seedKey(service, businessId, {
    type: 'private',
    scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE', 'AUDIENCE_LIST_WRITE', 'BLOG_WRITE', 'MEMORY_WRITE'],
  })
  return { service, businessId, sk: sk.key }
}

type Route = {
  what: string
  limit: number
  send: (s: Awaited<ReturnType<typeof setup>>, text: string) => Promise<Response>
  ok: number
  field: string
}

const ROUTES: Route[] = [
  {
    what: 'an event personId (1-200)',
    limit: 200,
    send: (s, text) => call(s.service, '/api/v0/analytics', { key: s.sk, body: { eventType: 'x', personId: text } }),
    ok: 202,
    field: 'personId',
  },
  {
    what: 'an event in a batch, anonymousId (1-200)',
    limit: 200,
    send: (s, text) =>
      call(s.service, '/api/v0/analytics', { key: s.sk, body: { events: [{ eventType: 'x' }, { eventType: 'x', anonymousId: text }] } }),
    ok: 202,
    field: 'events[1].anonymousId',
  },
  {
    what: 'a person firstName (1-200)',
    limit: 200,
    send: (s, text) => call(s.service, '/api/v0/audience/people', { key: s.sk, body: { email: 'ada@example.com', firstName: text } }),
    ok: 200,
    field: 'firstName',
  },
  {
    what: 'a person externalId (1-200)',
    limit: 200,
    send: (s, text) => call(s.service, '/api/v0/audience/people', { key: s.sk, body: { externalId: text } }),
    ok: 200,
    field: 'externalId',
  },
  {
    what: 'an erasure personId (1-200)',
    limit: 200,
    send: (s, text) => call(s.service, '/api/v0/analytics/erasures', { key: s.sk, body: { personId: text } }),
    ok: 202,
    field: 'personId',
  },
  {
    what: 'a blog tag name (1-100)',
    limit: 100,
    send: (s, text) => call(s.service, '/api/v0/blog/tags', { key: s.sk, body: { slug: 'tag', name: text } }),
    ok: 201,
    field: 'name',
  },
  {
    what: 'a memory title (1-300)',
    limit: 300,
    send: (s, text) => call(s.service, '/api/v0/memory', { key: s.sk, body: { title: text, content: 'x' } }),
    ok: 201,
    field: 'title',
  },
  {
    what: 'a business name, admin API (1-200)',
    limit: 200,
    send: (s, text) => admin(s.service, '/businesses', { body: { name: text } }),
    ok: 201,
    field: 'name',
  },
  {
    what: 'a key name, admin API (1-100, checked by the key rules too)',
    limit: 100,
    send: (s, text) =>
      admin(s.service, `/businesses/${s.businessId}/keys`, {
        body: { type: 'private', name: text, scopes: ['ANALYTICS_READ'], createdBy: 'ops' },
      }),
    ok: 201,
    field: 'name',
  },
  {
    what: 'a property name (up to 128)',
    limit: 128,
    send: (s, text) => call(s.service, '/api/v0/analytics', { key: s.sk, body: { eventType: 'x', properties: { [text]: 1 } } }),
    ok: 202,
    field: `properties.${emoji(129)}`,
  },
]

describe('limits on characters count code points: emoji at the bounds', () => {
  for (const route of ROUTES) {
    test(`${route.what}: ${route.limit} emoji accepted, ${route.limit + 1} refused naming the field`, async () => {
      const s = await setup()
      const full = await route.send(s, emoji(route.limit))
      expect(full.status).toBe(route.ok)
      const over = await route.send(s, emoji(route.limit + 1))
      expect(over.status).toBe(400)
      const error = await errorOf(over)
      expect(error.field).toBe(route.field)
    })
  }

  test('a member password of 12 emoji is long enough, and 201 emoji too long (12-200)', async () => {
    const s = await setup()
    const ok = await admin(s.service, `/businesses/${s.businessId}/members`, {
      body: { email: 'a@example.com', role: 'member', password: emoji(12) },
    })
    expect(ok.status).toBe(201)
    const long = await admin(s.service, `/businesses/${s.businessId}/members`, {
      body: { email: 'b@example.com', role: 'member', password: emoji(201) },
    })
    expect(long.status).toBe(400)
    expect((await errorOf(long)).field).toBe('password')
    // 11 emoji are 22 UTF-16 units, but 11 characters: too short.
    const short = await admin(s.service, `/businesses/${s.businessId}/members`, {
      body: { email: 'c@example.com', role: 'member', password: emoji(11) },
    })
    expect(short.status).toBe(400)
    expect((await errorOf(short)).field).toBe('password')
  })

  test('the message counts characters as the limit does: 201 emoji are "201 characters"', async () => {
    const s = await setup()
    const answer = await call(s.service, '/api/v0/analytics', { key: s.sk, body: { eventType: 'x', personId: emoji(201) } })
    const { message } = await errorOf(answer)
    expect(message).toContain('1-200 characters')
    expect(message).toContain('text of 201 characters')
  })

  test('the API reference states the limits in characters, as JSON Schema counts them', async () => {
    const s = await setup()
    const document = (await (await call(s.service, '/openapi')).json()) as {
      components: { schemas: Record<string, unknown> }
      paths: Record<string, unknown>
    }
    const text = JSON.stringify(document)
    // No doubled unit bounds and no internal format names leak into the reference.
    expect(text).not.toContain('code-points-')
    expect(text).not.toContain('"maxLength":400')
    expect(text).toContain('"maxLength":200')
  })
})

describe('codePointLength and hasCodePointsWithin', () => {
  const cases: [string, number][] = [
    ['', 0],
    ['abc', 3],
    [EMOJI, 1],
    [`a${EMOJI}b`, 3],
    ['\ud800', 1],
    ['\udc00\ud800', 2],
    [`\ud800${EMOJI}`, 2],
    ['é', 1],
    ['e\u0301', 2],
  ]
  for (const [text, n] of cases) {
    test(`${JSON.stringify(text)} has ${n} code points`, () => {
      expect(codePointLength(text)).toBe(n)
      expect(codePointLength(text)).toBe([...text].length)
      expect(hasCodePointsWithin(text, n, n)).toBe(true)
      expect(hasCodePointsWithin(text, n + 1, n + 5)).toBe(false)
      if (n > 0) expect(hasCodePointsWithin(text, 0, n - 1)).toBe(false)
    })
  }

  test('any string, against [...text].length', () => {
    const units = ['a', '\ud83d', '\ude00', EMOJI, 'é', '\u0000']
    for (let seed = 1; seed < 2000; seed++) {
      let text = ''
      for (let i = 0, x = seed; i < seed % 17; i++, x = (x * 1103515245 + 12345) % 2147483648) text += units[x % units.length]
      const n = [...text].length
      expect(codePointLength(text)).toBe(n)
      for (const [min, max] of [
        [0, n],
        [n, n + 3],
        [Math.max(0, n - 2), n - 1],
        [n + 1, n + 9],
      ] as const) {
        if (max < min || max < 0) continue
        expect(hasCodePointsWithin(text, min, max)).toBe(n >= min && n <= max)
      }
    }
  })
})
