import { describe, expect, test } from 'bun:test'
import { Kind, type TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { SCOPES } from '../../src/access/scopes.ts'
import { validationProblem } from '../../src/shared/validation-message.ts'
import { storedRows } from '../support/hostile.ts'
import { ADMIN_TOKEN, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

/**
 * Every body of /api/v0 and /admin/v0, read from the app's route list (a new route is
 * covered the day it lands): its schema is strict at every depth, an unknown field at any
 * object in it answers 400 naming the field, and no invalid value of any field draws a
 * message in TypeBox's own words.
 */

const service = await testService()

/** A private key holding every scope (tables are emptied between tests: one per test). */
async function privateKey(): Promise<string> {
  const businessId = await seedBusiness(service)
  const seeded = await seedKey(service, businessId, {
    type: 'private',
    scopes: [...SCOPES],
    rateLimit: { limit: 1_000_000, windowSeconds: 60 },
  })
  return seeded.key
}

const bodyRoutes = [
  ...service.app.routes
    .filter((r) => /^\/(api|admin)\/v0\//.test(r.path) && r.hooks.body)
    .map((r) => ({ method: r.method, path: r.path, schema: r.hooks.body as TSchema })),
  // Direct routes (src/http/direct-route.ts) check their body in the handler.
  ...service.services.direct.routes.flatMap(({ spec }) => (spec.body ? [{ method: spec.method, path: spec.path, schema: spec.body }] : [])),
]

/** TypeBox's default phrasings (@sinclair/typebox/errors DefaultErrorFunction). */
const TYPEBOX_WORDS = [
  /^Expected /,
  /: Expected /,
  /less or equal/,
  /greater or equal/,
  /union value/,
  /Unexpected property/,
  /required property/,
  /to match '/,
  /Unknown error type/,
  /Expected kind/,
]

function concrete(path: string): string {
  return path.replace(/:id|:runId/g, '00000000-0000-4000-8000-000000000000').replace(/:[A-Za-z]+/g, 'some-slug')
}

function send(key: string, route: { method: string; path: string }, body: unknown): Promise<Response> {
  const admin = route.path.startsWith('/admin/')
  return call(service, concrete(route.path), {
    method: route.method,
    key: admin ? null : key,
    headers: admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {},
    // As JSON text: the helper sends a string as it is.
    body: JSON.stringify(body),
  })
}

type Node = TSchema & Record<string, unknown>
/** A place in a body: the object path to it (`people`, `0`, `email`) and its schema. */
interface Site {
  path: (string | number)[]
  schema: Node
}

/** Every field, at any depth, with the way down to it (array items as index 0). */
function sites(schema: TSchema, path: (string | number)[] = []): Site[] {
  const node = schema as Node
  const here: Site[] = [{ path, schema: node }]
  if (Array.isArray(node.anyOf)) return [...here, ...(node.anyOf as TSchema[]).flatMap((variant) => sites(variant, path).slice(1))]
  if (node[Kind] === 'Object') {
    const properties = node.properties as Record<string, TSchema>
    return [...here, ...Object.entries(properties).flatMap(([name, inner]) => sites(inner, [...path, name]))]
  }
  if (node[Kind] === 'Array') return [...here, ...sites(node.items as TSchema, [...path, 0])]
  return here
}

/** Objects of fixed fields, at any depth. */
function objectSites(schema: TSchema): Site[] {
  return sites(schema).filter((site) => site.schema[Kind] === 'Object')
}

/** Values a site must refuse, one per rule it has. */
function invalidValues(schema: Node): unknown[] {
  const values: unknown[] = []
  const kind = schema[Kind]
  if (kind !== 'String' && !(kind === 'Union' && (schema.anyOf as Node[]).some((v) => v[Kind] === 'String'))) values.push('text')
  if (kind !== 'Number' && kind !== 'Integer') values.push(12)
  values.push(true, [1])
  if (kind === 'String') {
    values.push({})
    if (typeof schema.maxLength === 'number') values.push('x'.repeat(schema.maxLength + 1))
    if (typeof schema.minLength === 'number' && schema.minLength > 0) values.push('')
    if (schema.pattern || schema.format) values.push('no such shape !')
  }
  if (kind === 'Integer' || kind === 'Number') {
    values.push(1.5, -1e9, 1e12)
    if (typeof schema.minimum === 'number') values.push(schema.minimum - 1)
    if (typeof schema.maximum === 'number') values.push(schema.maximum + 1)
  }
  if (kind === 'Array') {
    values.push({})
    if (typeof schema.maxItems === 'number') values.push(Array.from({ length: schema.maxItems + 1 }, () => null))
    if (typeof schema.minItems === 'number' && schema.minItems > 0) values.push([])
  }
  if (kind === 'Object' || kind === 'Record') {
    if (kind === 'Object') values.push({ 'no such field': 1 })
    if (typeof schema.maxProperties === 'number')
      values.push(Object.fromEntries(Array.from({ length: schema.maxProperties + 1 }, (_, i) => [`p${i}`, i])))
    if (typeof schema.minProperties === 'number') values.push({})
  }
  if (kind === 'Union') values.push('neither', {})
  return values.filter((value) => !Value.Check(schema, value))
}

/** A body holding `value` at `path`, everything else left out. */
function bodyWith(path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value
  const [head, ...rest] = path
  const inner = bodyWith(rest, value)
  return typeof head === 'number' ? [inner] : { [head!]: inner }
}

function fieldName(path: (string | number)[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('')
}

/** Kinds JSON writes without quotes; a string in their place is refused, never coerced. */
const UNQUOTED = new Set(['Integer', 'Number', 'Boolean'])

function unquoted(schema: Node): Node | undefined {
  if (UNQUOTED.has(schema[Kind] as string)) return schema
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Node[]).find((variant) => UNQUOTED.has(variant[Kind] as string))
  return undefined
}

/** A value the schema takes, or undefined when this little generator cannot make one. */
function example(schema: Node): unknown {
  if ('const' in schema) return schema.const
  switch (schema[Kind]) {
    case 'Integer':
    case 'Number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1
    case 'Boolean':
      return true
    case 'Null':
      return null
    case 'Array':
      return typeof schema.minItems === 'number' && schema.minItems > 0 ? [example(schema.items as Node)] : []
    case 'Record':
      return {}
    case 'String':
      if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString()
      return 'x'.repeat(Math.max(1, Number(schema.minLength ?? 1)))
    case 'Object': {
      const required = (schema.required as string[] | undefined) ?? []
      const properties = schema.properties as Record<string, Node>
      return Object.fromEntries(required.map((name) => [name, example(properties[name]!)]))
    }
  }
  if (Array.isArray(schema.anyOf)) {
    for (const variant of schema.anyOf as Node[]) {
      const value = example(variant)
      if (value !== undefined && Value.Check(variant, value)) return value
    }
  }
  return undefined
}

/** `body` with `value` put at `path`, the objects on the way made from their schemas. */
function placed(schema: Node, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value
  const [head, ...rest] = path
  const inner = (node: Node): Node => {
    if (Array.isArray(node.anyOf)) {
      const found = (node.anyOf as Node[]).find((v) => (typeof head === 'number' ? v[Kind] === 'Array' : v[Kind] === 'Object'))
      return found ?? node
    }
    return node
  }
  const here = inner(schema)
  if (typeof head === 'number') return [placed(inner(here.items as Node), rest, value)]
  const base = (example(here) ?? {}) as Record<string, unknown>
  return { ...base, [head!]: placed(inner((here.properties as Record<string, Node>)[head!]!), rest, value) }
}

test('the route list has the bodies of both surfaces', () => {
  const names = bodyRoutes.map((r) => `${r.method} ${r.path}`)
  expect(names).toContain('POST /api/v0/audience/people')
  expect(names).toContain('POST /admin/v0/businesses/:id/keys')
  expect(names.length).toBeGreaterThan(15)
})

test('the API reference shows every request body as strict', async () => {
  const document = (await (await service.app.handle(new Request('http://localhost/openapi'))).json()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>
  }
  const open: string[] = []
  const walk = (schema: unknown, where: string): void => {
    if (typeof schema !== 'object' || schema === null) return
    const node = schema as Record<string, unknown>
    if (node.properties && node.additionalProperties !== false) open.push(where)
    for (const [key, inner] of Object.entries(node)) {
      if (key === 'properties') for (const [name, field] of Object.entries(inner as object)) walk(field, `${where}.${name}`)
      else if (key === 'items' || key === 'anyOf' || key === 'oneOf' || key === 'allOf') walk(inner, where)
      else if (Array.isArray(node) && typeof inner === 'object') walk(inner, where)
    }
  }
  let bodies = 0
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const schema = operation.requestBody?.content['application/json']?.schema
      if (!schema) continue
      // Every documented body is walked; the count is of the two surfaces bodyRoutes lists
      // (the /security report routes take no key, and are tested in test/api/leaks.test.ts).
      if (/^\/(api|admin)\/v0\//.test(path)) bodies++
      walk(schema, `${method.toUpperCase()} ${path}`)
    }
  }
  expect(bodies).toBe(bodyRoutes.length)
  expect(open).toEqual([])
})

describe.each(bodyRoutes)('$method $path', (route) => {
  test('every object of fixed fields in the schema refuses unknown fields', () => {
    const open = objectSites(route.schema).filter((site) => site.schema.additionalProperties !== false)
    expect(open.map((site) => fieldName(site.path) || '(body)')).toEqual([])
  })

  test('an unknown field at any depth answers 400 naming it, and writes nothing', async () => {
    const key = await privateKey()
    for (const site of objectSites(route.schema)) {
      const field = fieldName([...site.path, 'zzUnknown'])
      const before = await storedRows()
      const response = await send(key, route, bodyWith([...site.path, 'zzUnknown'], 1))
      expect(response.status, field).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toStartWith(`Unknown body field "${field}"`)
      expect(await storedRows()).toBe(before)
    }
  })

  test('a near miss of a field is answered with the field meant', async () => {
    const key = await privateKey()
    for (const site of objectSites(route.schema)) {
      const [name] = Object.keys(site.schema.properties as object).filter((n) => n.length >= 4)
      if (!name) continue
      const typo = name.slice(0, 1) + name.slice(2)
      const response = await send(key, route, bodyWith([...site.path, typo], 1))
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toBe(`Unknown body field "${fieldName([...site.path, typo])}"; did you mean "${name}"?`)
    }
  })

  test("no error TypeBox finds in an invalid value is worded in TypeBox's words", () => {
    // Every error, not only the one an answer reports: each kind at each field is worded.
    const check = TypeCompiler.Compile(route.schema)
    const leaks: string[] = []
    for (const site of sites(route.schema)) {
      for (const value of invalidValues(site.schema)) {
        for (const error of check.Errors(bodyWith(site.path, value))) {
          const message = validationProblem('body', [error]).message
          if (TYPEBOX_WORDS.some((words) => words.test(message)))
            leaks.push(`${fieldName(site.path)} = ${JSON.stringify(value).slice(0, 60)}: ${message}`)
        }
      }
    }
    expect(leaks).toEqual([])
  })

  test('every invalid value answers 400 with the envelope, in words of our own', async () => {
    const key = await privateKey()
    const leaks: string[] = []
    for (const site of sites(route.schema)) {
      for (const value of invalidValues(site.schema)) {
        const response = await send(key, route, bodyWith(site.path, value))
        const text = await response.text()
        if (response.status !== 400) {
          leaks.push(`${fieldName(site.path)} = ${JSON.stringify(value).slice(0, 60)}: ${response.status} ${text}`)
          continue
        }
        const error = (JSON.parse(text) as { error: { code: string; message: string; requestId: string } }).error
        expect(error.code).toBe('invalid_request')
        expect(error.requestId).toBeString()
        if (TYPEBOX_WORDS.some((words) => words.test(error.message)))
          leaks.push(`${fieldName(site.path)} = ${JSON.stringify(value).slice(0, 60)}: ${error.message}`)
      }
    }
    expect(leaks).toEqual([])
  })
})

test('a number or boolean written as text is refused in every body, never coerced, and nothing is stored', async () => {
  const key = await privateKey()
  const refused: string[] = []
  for (const route of bodyRoutes) {
    for (const site of sites(route.schema)) {
      const schema = unquoted(site.schema)
      if (!schema || site.path.length === 0) continue
      const field = fieldName(site.path)
      const fine = example(schema)
      const body = placed(route.schema as Node, site.path, String(fine))
      // Named when the text is the body's only fault (the rest made from the schema).
      const named = Value.Check(route.schema, placed(route.schema as Node, site.path, fine))
      const before = await storedRows()
      const response = await send(key, route, body)
      expect(response.status, `${route.method} ${route.path} ${field}`).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      if (named) expect(error.message).toContain(`"${field}"`)
      expect(await storedRows()).toBe(before)
      refused.push(`${route.method} ${route.path} ${field}${named ? '' : ' (unnamed)'}`)
    }
  }
  // The key settings carry whole numbers; the sweep must have found them.
  expect(refused).toContain('POST /admin/v0/businesses/:id/keys rateLimit.limit')
  expect(refused).toContain('PATCH /admin/v0/keys/:id rateLimit.windowSeconds')
})

test('query strings and path parameters are worded the same way', async () => {
  const key = await privateKey()
  const leaks: string[] = []
  let refused = 0
  const routes = service.app.routes.filter((r) => r.path.startsWith('/api/v0/') && r.method === 'GET')
  for (const route of routes) {
    const query = route.hooks.query as { properties?: Record<string, unknown> } | undefined
    const requests = [
      ...Object.keys(query?.properties ?? {}).flatMap((name) =>
        ['', 'x'.repeat(400), '!', '-1', '\u0000'].map((value) => `${concrete(route.path)}?${name}=${encodeURIComponent(value)}`),
      ),
      ...(route.path.includes(':') ? [route.path.replace(/:[A-Za-z]+/g, '!')] : []),
    ]
    for (const path of requests) {
      const response = await call(service, path, { key })
      if (response.status !== 400) continue
      refused++
      const { message } = await errorOf(response)
      if (TYPEBOX_WORDS.some((words) => words.test(message))) leaks.push(`${path.slice(0, 80)}: ${message}`)
    }
  }
  expect(refused).toBeGreaterThan(30)
  expect(leaks).toEqual([])
})
