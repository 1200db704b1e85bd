import { describe, expect, test } from 'bun:test'
import { cleanSchema, errorCodesOf, type RouteFacts } from '../../src/http/openapi-document.ts'

const route = (facts: Partial<RouteFacts>): RouteFacts => ({
  guard: 'key',
  body: false,
  pathParams: false,
  query: false,
  headers: [],
  database: true,
  also: [],
  ...facts,
})

describe('errorCodesOf: the answers a route can give, from its rule and inputs', () => {
  test('a public route with no scope and no input: the key checks, an origin, the budget, faults', () => {
    expect(errorCodesOf(route({ access: { scope: null, public: true } }))).toEqual([
      'missing_api_key',
      'malformed_api_key',
      'invalid_api_key',
      'expired_api_key',
      'origin_not_allowed',
      'ip_not_allowed',
      'rate_limited',
      'internal_error',
      'unavailable',
    ])
  })

  test('a private route with a scope, a body and an id: every check of the chain, and the id may name nothing', () => {
    const codes = errorCodesOf(route({ access: { scope: 'BLOG_WRITE', public: false }, body: true, pathParams: true }))
    for (const code of [
      'public_key_not_allowed',
      'insufficient_scope',
      'invalid_request',
      'payload_too_large',
      'unsupported_media_type',
      'not_found',
    ] as const) {
      expect(codes).toContain(code)
    }
    expect(codes).not.toContain('idempotency_key_reused')
  })

  test('an Idempotency-Key header brings its 422; a route names domain answers itself', () => {
    expect(errorCodesOf(route({ access: { scope: 'FLOW_TRIGGER', public: true }, headers: ['idempotency-key'] }))).toContain(
      'idempotency_key_reused',
    )
    expect(errorCodesOf(route({ access: { scope: 'BLOG_WRITE', public: false }, also: ['conflict'] }))).toContain('conflict')
  })

  test('the admin token: unauthorized instead of the key codes; /metrics needs no database', () => {
    const codes = errorCodesOf(route({ guard: 'admin', database: false }))
    expect(codes).toEqual(['unauthorized', 'rate_limited', 'internal_error'])
  })
})

describe('cleanSchema: JSON Schema as OpenAPI 3.1 reads it', () => {
  test('drops our `error` message keyword but keeps a property named error', () => {
    expect(
      cleanSchema({
        type: 'object',
        error: 'must be an object',
        properties: { error: { type: 'string', minLength: 1, error: 'must not be empty' } },
      }),
    ).toEqual({ type: 'object', properties: { error: { type: 'string', minLength: 1 } } })
  })

  test('nullable becomes a null type, once', () => {
    expect(cleanSchema({ nullable: true, type: ['string', 'null'] })).toEqual({ type: ['string', 'null'] })
    expect(cleanSchema({ nullable: true, type: 'string' })).toEqual({ type: ['string', 'null'] })
    expect(cleanSchema({ nullable: true, description: 'd', properties: {} })).toEqual({
      description: 'd',
      anyOf: [{ properties: {} }, { type: 'null' }],
    })
  })

  test("Elysia's integer coercion union is the integer", () => {
    expect(
      cleanSchema({
        description: 'n',
        anyOf: [
          { type: 'string', format: 'integer', default: 0 },
          { type: 'integer', description: 'n' },
        ],
      }),
    ).toEqual({ type: 'integer', description: 'n' })
  })

  test('documentAs shows the type a text query value stands for', () => {
    expect(cleanSchema({ type: 'string', pattern: '^[0-9]+$', description: 'Rows', documentAs: { type: 'integer', minimum: 1 } })).toEqual({
      type: 'integer',
      minimum: 1,
      description: 'Rows',
    })
  })
})
