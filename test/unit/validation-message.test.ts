import { describe, expect, test } from 'bun:test'
import { t, type TSchema } from 'elysia'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { closestName, editDistance, fieldName, validationProblem } from '../../src/shared/validation-message.ts'
import { strictObjects } from '../../src/shared/validation.ts'

describe('editDistance', () => {
  test.each([
    ['firstName', 'firstName', 0],
    ['fistName', 'firstName', 1],
    ['emial', 'email', 1],
    ['nmae', 'name', 1],
    ['tag', 'tags', 1],
    ['slg', 'slug', 1],
    ['kitten', 'sitting', 3],
    ['', 'abc', 3],
    ['a', 'abcdefgh', Infinity],
  ] as const)('%s -> %s: %d', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance)
  })
})

describe('closestName', () => {
  const person = ['email', 'externalId', 'firstName', 'lastName', 'properties']
  test.each([
    ['fistName', 'firstName'],
    ['firstname', 'firstName'],
    ['first_name', 'firstName'],
    ['emial', 'email'],
    ['e-mail', 'email'],
    ['externalID', 'externalId'],
    ['propertys', 'properties'],
    ['lastname', 'lastName'],
    ['name', undefined],
    ['phone', undefined],
    ['x', undefined],
    ['', undefined],
    ['email'.repeat(30), undefined],
  ] as const)('%s -> %s', (name, expected) => {
    expect(closestName(name, person)).toBe(expected)
  })

  test('ties go to the earlier name', () => {
    expect(closestName('nam', ['name', 'nap'])).toBe('name')
  })
})

describe('fieldName', () => {
  test.each([
    ['', ''],
    ['/eventType', 'eventType'],
    ['/events/3/eventType', 'events[3].eventType'],
    ['/people/0/properties/a~1b', 'people[0].properties.a/b'],
    ['/x~0y', 'x~y'],
  ])('%p -> %p', (path, name) => {
    expect(fieldName(path)).toBe(name)
  })
})

/** The message the body `value` draws from `schema`, through the same wording as an answer. */
function messageFor(schema: TSchema, value: unknown): string {
  const check = TypeCompiler.Compile(strictObjects(schema))
  expect(check.Check(value)).toBe(false)
  return validationProblem('body', check.Errors(value)).message
}

const Person = t.Object({
  email: t.Optional(t.String({ format: 'email', maxLength: 254 })),
  firstName: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
})

describe('validationProblem: one wording per error kind', () => {
  test.each<[string, TSchema, unknown, string]>([
    [
      'an unknown field, near a known one',
      Person,
      { email: 'ada@example.com', fistName: 'Ada' },
      'Unknown body field "fistName"; did you mean "firstName"?',
    ],
    [
      'an unknown field in a batch item',
      t.Object({ people: t.Array(Person) }),
      { people: [{}, {}, {}, { fistName: 'Ada' }] },
      'Unknown body field "people[3].fistName"; did you mean "firstName"?',
    ],
    [
      'an unknown field, near nothing',
      Person,
      { phone: '1' },
      'Unknown body field "phone": remove it; the fields here are "email" and "firstName".',
    ],
    [
      'an unknown field beside a missing one: the unknown one',
      t.Object({ slug: t.String() }),
      { slg: 'x' },
      'Unknown body field "slg"; did you mean "slug"?',
    ],
    [
      'an unknown field inside a nullable object',
      t.Object({ rateLimit: t.Nullable(t.Object({ limit: t.Integer() })) }),
      { rateLimit: { limt: 1 } },
      'Unknown body field "rateLimit.limt"; did you mean "limit"?',
    ],
    [
      'a missing field',
      t.Object({ slug: t.String({ maxLength: 64 }) }),
      {},
      'Invalid body field "slug": is missing; it is required and must be text of at most 64 characters.',
    ],
    [
      'a missing field with its own words',
      t.Object({ id: t.String({ error: 'must be a UUID' }) }),
      {},
      'Invalid body field "id": is missing; it is required and must be a UUID.',
    ],
    [
      'too long',
      Person,
      { firstName: 'x'.repeat(201) },
      'Invalid body field "firstName": must be text of 1-200 characters; got text of 201 characters.',
    ],
    ['too short', Person, { firstName: '' }, 'Invalid body field "firstName": must be text of 1-200 characters; got "".'],
    ['not text', Person, { firstName: 12 }, 'Invalid body field "firstName": must be text of 1-200 characters; got 12.'],
    [
      'a format',
      Person,
      { email: 'nope' },
      'Invalid body field "email": must be an email address like "ada@example.com", at most 254 characters; got "nope".',
    ],
    [
      'a pattern',
      t.Object({ code: t.String({ pattern: '^[a-z]+$' }) }),
      { code: 'A1' },
      'Invalid body field "code": must be text matching the pattern ^[a-z]+$; got "A1".',
    ],
    // TypeBox checks a string's type and length, not its enum (src/keys/rules.ts names a wrong scope).
    [
      'an enum',
      t.Object({ scope: t.String({ maxLength: 4, enum: ['A', 'B'] }) }),
      { scope: 12 },
      'Invalid body field "scope": must be one of "A" or "B"; got 12.',
    ],
    [
      'a literal union',
      t.Object({ type: t.Union([t.Literal('public'), t.Literal('private')]) }),
      { type: 'secret' },
      'Invalid body field "type": must be one of "public" or "private"; got "secret".',
    ],
    [
      'a nullable',
      t.Object({ at: t.Nullable(t.String({ format: 'date-time' })) }),
      { at: 5 },
      'Invalid body field "at": must be an ISO-8601 date-time like "2026-01-31T12:00:00Z", or null; got 5.',
    ],
    [
      'an integer',
      t.Object({ n: t.Integer({ minimum: 1, maximum: 10 }) }),
      { n: 1.5 },
      'Invalid body field "n": must be a whole number from 1 to 10; got 1.5.',
    ],
    [
      'a number under its minimum',
      t.Object({ n: t.Number({ minimum: 0 }) }),
      { n: -1 },
      'Invalid body field "n": must be a number at least 0; got -1.',
    ],
    ['a boolean', t.Object({ on: t.Boolean() }), { on: 'yes' }, 'Invalid body field "on": must be true or false; got "yes".'],
    [
      'too many items',
      t.Object({ events: t.Array(t.String(), { minItems: 1, maxItems: 2 }) }),
      { events: ['a', 'b', 'c'] },
      'Invalid body field "events": must be a list of 1-2 items; got a list of 3 items.',
    ],
    [
      'no items',
      t.Object({ events: t.Array(t.String(), { minItems: 1, maxItems: 2 }) }),
      { events: [] },
      'Invalid body field "events": must be a list of 1-2 items; got an empty list.',
    ],
    [
      'too many properties',
      t.Object({ p: t.Record(t.String(), t.Unknown(), { maxProperties: 1 }) }),
      { p: { a: 1, b: 2 } },
      'Invalid body field "p": must be a JSON object with at most 1 property; got an object with 2 properties.',
    ],
    ['not an object', Person, [1], 'Invalid body: must be a JSON object with the fields "email" and "firstName"; got a list of 1 item.'],
    [
      'no field of a patch',
      t.Partial(t.Object({ a: t.String(), b: t.String() }), { minProperties: 1 }),
      {},
      'Invalid body: must be a JSON object with at least one of the fields "a" and "b"; got an empty object.',
    ],
    [
      "the schema's own words win",
      t.Object({ slug: t.String({ pattern: '^[a-z]+$', error: 'must be lower-case letters' }) }),
      { slug: 'A' },
      'Invalid body field "slug": must be lower-case letters.',
    ],
  ])('%s', (_, schema, value, message) => {
    expect(messageFor(schema, value)).toBe(message)
  })

  test('a huge unknown name is cut', () => {
    const message = messageFor(Person, { ['x'.repeat(5000)]: 1 })
    expect(message.length).toBeLessThan(400)
    expect(message).toStartWith('Unknown body field "xxx')
  })

  test('query and params are named as such', () => {
    const check = TypeCompiler.Compile(t.Object({ limit: t.String({ pattern: '^[0-9]+$' }) }))
    expect(validationProblem('query', check.Errors({ limit: 'ten' })).message).toStartWith('Invalid query field "limit": ')
  })
})

describe('strictObjects', () => {
  test('closes every object of fixed fields, and leaves free-form records open', () => {
    const schema = strictObjects(
      t.Object({
        people: t.Array(t.Object({ email: t.String(), properties: t.Record(t.String(), t.Unknown()) })),
        rateLimit: t.Optional(t.Nullable(t.Object({ limit: t.Integer() }))),
      }),
    ) as unknown as {
      additionalProperties: boolean
      properties: {
        people: { items: { additionalProperties: boolean; properties: { properties: { additionalProperties?: unknown } } } }
        rateLimit: { anyOf: { additionalProperties?: boolean }[] }
      }
    }
    expect(schema.additionalProperties).toBe(false)
    expect(schema.properties.people.items.additionalProperties).toBe(false)
    expect(schema.properties.people.items.properties.properties.additionalProperties).toBeUndefined()
    expect(schema.properties.rateLimit.anyOf[0]!.additionalProperties).toBe(false)
  })

  test('keeps what makes a field optional', () => {
    const check = TypeCompiler.Compile(strictObjects(t.Object({ a: t.Optional(t.String()) })))
    expect(check.Check({})).toBe(true)
    expect(check.Check({ b: 1 })).toBe(false)
  })
})
