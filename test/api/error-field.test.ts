import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { RUNS, storedRows } from '../support/hostile.ts'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// A 400 about one field names it in the envelope's `field` (docs/api.md, "Errors"): a
// program finds the refused item there, never by reading the message.

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const sk = await seedKey(service, businessId, {
    type: 'private',
    scopes: ['ANALYTICS_WRITE', 'ANALYTICS_READ', 'AUDIENCE_PERSON_WRITE', 'BLOG_READ'],
  })
  return { service, businessId, sk: sk.key, keyId: sk.record.id }
}

const HOUR = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()

/** One bad value of an event, and the path under the event that the 400 must name. */
const BAD_EVENT_FIELDS: [string, (event: Record<string, unknown>) => Record<string, unknown>, string][] = [
  ['an eventType with a space', (e) => ({ ...e, eventType: 'page view' }), 'eventType'],
  ['no eventType', ({ eventType: _, ...e }) => e, 'eventType'],
  ['an eventType that is a number', (e) => ({ ...e, eventType: 5 }), 'eventType'],
  ['a url over 2048 characters', (e) => ({ ...e, url: `https://a.example/${'x'.repeat(2048)}` }), 'url'],
  ['an empty personId', (e) => ({ ...e, personId: '' }), 'personId'],
  ['an anonymousId of 201 characters', (e) => ({ ...e, anonymousId: 'a'.repeat(201) }), 'anonymousId'],
  ['an id that is no UUID', (e) => ({ ...e, id: 'not-a-uuid' }), 'id'],
  ['a timestamp that is no date', (e) => ({ ...e, timestamp: 'yesterday' }), 'timestamp'],
  ['a timestamp 48 h ahead', (e) => ({ ...e, timestamp: iso(Date.now() + 48 * HOUR) }), 'timestamp'],
  ['a timestamp before 2000', (e) => ({ ...e, timestamp: '1999-12-31T00:00:00Z' }), 'timestamp'],
  ['a timestamp of February 30', (e) => ({ ...e, timestamp: '2026-02-30T00:00:00Z' }), 'timestamp'],
  ['properties that are text', (e) => ({ ...e, properties: 'plan=pro' }), 'properties'],
  ['U+0000 in a property', (e) => ({ ...e, properties: { note: 'a\u0000b' } }), 'properties.note'],
  ['a lone surrogate deep in properties', (e) => ({ ...e, properties: { a: { b: ['x', '\ud800'] } } }), 'properties.a.b[1]'],
  ['a property name over 128 characters', (e) => ({ ...e, properties: { ['k'.repeat(129)]: 1 } }), `properties.${'k'.repeat(129)}`],
  [
    'properties nested 9 levels',
    (e) => ({ ...e, properties: { a: { b: { c: { d: { e: { f: { g: { h: { i: 1 } } } } } } } } } }),
    'properties.a.b.c.d.e.f.g.h',
  ],
  ['an unknown field', (e) => ({ ...e, colour: 'red' }), 'colour'],
  ['a near miss of a field', (e) => ({ ...e, persnId: 'p1' }), 'persnId'],
]

const validEvent = (n: number) => ({ eventType: 'page_view', url: `https://a.example/${n}`, personId: `p${n}` })

describe('a batch names the refused event in `field`', () => {
  test('any bad field of any one event of a batch: 400, `field` is events[i].<path>, nothing stored', async () => {
    const s = await setup()
    const before = await storedRows()
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }).chain((size) => fc.tuple(fc.constant(size), fc.integer({ min: 0, max: size - 1 }))),
        fc.integer({ min: 0, max: BAD_EVENT_FIELDS.length - 1 }),
        async ([size, bad], which) => {
          const [, spoil, path] = BAD_EVENT_FIELDS[which]!
          const events = Array.from({ length: size }, (_, i) => (i === bad ? spoil(validEvent(i)) : validEvent(i)))
          const answer = await call(s.service, '/api/v0/analytics', { key: s.sk, body: { events } })
          expect(answer.status).toBe(400)
          const error = await errorOf(answer)
          expect(error.code).toBe('invalid_request')
          expect(error.field).toBe(`events[${bad}].${path}`)
        },
      ),
      { numRuns: RUNS },
    )
    expect(await storedRows()).toBe(before)
  })

  for (const [what, spoil, path] of BAD_EVENT_FIELDS) {
    test(`one event with ${what}: \`field\` is "${path}"`, async () => {
      const s = await setup()
      const answer = await call(s.service, '/api/v0/analytics', { key: s.sk, body: spoil(validEvent(0)) })
      expect(answer.status).toBe(400)
      expect((await errorOf(answer)).field).toBe(path)
    })
  }
})

describe('every 400 about one field names it, on every kind of input', () => {
  const cases: [string, string, { method?: string; body?: unknown; admin?: boolean }, string][] = [
    // Query parameters: the schema's checks and the routes' own.
    ['a limit that is text', '/api/v0/analytics?limit=ten', {}, 'limit'],
    ['a limit over 1000', '/api/v0/analytics?limit=5000', {}, 'limit'],
    ['a type filter with a space', '/api/v0/analytics?type=a%20b', {}, 'type'],
    ['a from that is no date', '/api/v0/analytics?from=soon', {}, 'from'],
    ['a to before from', '/api/v0/analytics?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', {}, 'to'],
    ['a cursor that is garbage', '/api/v0/analytics?cursor=abc', {}, 'cursor'],
    // Single bodies.
    ['an erasure with an empty personId', '/api/v0/analytics/erasures', { body: { personId: '' } }, 'personId'],
    ['an erasure with a misspelt personId', '/api/v0/analytics/erasures', { body: { personid: 'p1' } }, 'personid'],
    ['a person with an email that is a number', '/api/v0/audience/people', { body: { email: 42 } }, 'email'],
    ['a person with U+0000 in firstName', '/api/v0/audience/people', { body: { email: 'a@b.io', firstName: 'A\u0000' } }, 'firstName'],
    [
      'a batch of people, the second without a key',
      '/api/v0/audience/people',
      { body: { people: [{ email: 'a@b.io' }, { firstName: 'B' }] } },
      'people[1]',
    ],
    // The operators' API.
    ['a business with an empty name', '/admin/v0/businesses', { admin: true, body: { name: '' } }, 'name'],
    [
      'a member with no email address',
      '/admin/v0/businesses/:business/members',
      { admin: true, body: { email: 'nobody', role: 'member' } },
      'email',
    ],
    [
      'a key with a blank name',
      '/admin/v0/businesses/:business/keys',
      { admin: true, body: { type: 'private', name: '   ', scopes: ['ANALYTICS_READ'], createdBy: 'ops' } },
      'name',
    ],
    [
      'a usage range too long',
      '/admin/v0/keys/:key/usage?interval=minute&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z',
      { admin: true },
      'from',
    ],
  ]
  for (const [what, path, options, field] of cases) {
    test(`${what}: 400 with field "${field}"`, async () => {
      const s = await setup()
      const url = path.replace(':business', s.businessId).replace(':key', s.keyId)
      const answer = options.admin
        ? await admin(s.service, url.slice('/admin/v0'.length), { body: options.body, method: options.method })
        : await call(s.service, url, { key: s.sk, body: options.body, method: options.method })
      expect(answer.status).toBe(400)
      const error = await errorOf(answer)
      expect(error.code).toBe('invalid_request')
      expect(error.field).toBe(field)
      // The message still names it for people.
      expect(error.message).toContain(field)
    })
  }

  const whole: [string, string, unknown][] = [
    ['a body that is not JSON', '/api/v0/analytics', '{"eventType":'],
    ['a body nested too deep', '/api/v0/analytics', '['.repeat(100)],
    ['an erasure naming no one', '/api/v0/analytics/erasures', {}],
  ]
  for (const [what, path, body] of whole) {
    test(`${what}: 400 without a field (no one field is at fault)`, async () => {
      const s = await setup()
      const answer = await call(s.service, path, { key: s.sk, body })
      expect(answer.status).toBe(400)
      const error = await errorOf(answer)
      expect(error.code).toBe('invalid_request')
      expect('field' in error).toBe(false)
    })
  }

  test('answers other than 400 carry no field', async () => {
    const s = await setup()
    const answer = await call(s.service, '/api/v0/analytics', { key: 'sk_0123456789abcdefghijABCDEFGHIJ', body: { eventType: 'x' } })
    expect(answer.status).toBe(401)
    expect('field' in (await errorOf(answer))).toBe(false)
  })
})
