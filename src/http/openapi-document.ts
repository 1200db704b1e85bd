import { errorStatus, type ErrorCode } from '../errors.ts'

type Json = Record<string, unknown>

export const API_TITLE = 'Keygate engagement API'

/** What each code means to the caller; the reference lists them under each answer. */
const CODE_MEANINGS: Record<ErrorCode, string> = {
  missing_api_key: 'no `Authorization` header',
  malformed_api_key:
    'the header is not `Bearer pk_…` or `Bearer sk_…` with 20-40 letters and digits, or a 36-character key whose checksum fails',
  invalid_api_key: 'no such key, or it was revoked',
  expired_api_key: 'the key is past its `expiresAt`',
  unauthorized: 'the admin token is missing or wrong',
  invalid_signature: "a secret-scanning report's signature is missing, malformed, wrong, or made with a key GitHub does not publish",
  origin_not_allowed: "a public key was sent from an origin outside the key's allowed origins",
  ip_not_allowed: "a private key was sent from a client address outside the key's allowed IPs",
  public_key_not_allowed: 'this endpoint takes private keys only',
  insufficient_scope: "the key lacks this endpoint's scope",
  invalid_request: 'a field, parameter or body is invalid; the message names it and the fix',
  not_found: 'nothing with that id or slug in this business',
  method_not_allowed: 'the path exists but not with this method; `Allow` lists the methods it takes',
  list_not_found: 'no list with that slug in this business',
  conflict: 'the change conflicts with what is stored; the message says which way out',
  idempotency_key_reused: 'this Idempotency-Key was used with a different body',
  payload_too_large: 'the body is over 1 MiB (64 KiB for public keys)',
  unsupported_media_type: 'the body was not sent as `application/json`',
  rate_limited: 'over the budget; retry after `Retry-After` seconds',
  internal_error: 'a fault of the service (logged under the request id)',
  unavailable: 'the database does not answer or the write queue is full; retry after `Retry-After` seconds',
}

const TAGS = [
  { name: 'keys', description: 'The calling key itself.' },
  { name: 'analytics', description: 'Events from pages and servers, and reading them back.' },
  { name: 'audience', description: 'People, companies and lists.' },
  { name: 'blog', description: 'Blogs, authors and tags.' },
  { name: 'flow', description: 'Triggering flows and reading their runs.' },
  { name: 'memory', description: 'Documents kept for a business.' },
  { name: 'admin', description: "The operators' API: businesses, keys, members, flows (admin token)." },
  { name: 'operations', description: 'Running the service (admin token).' },
  { name: 'security', description: 'Reporting keys found in public places (no key needed).' },
]

/**
 * Domain answers a route gives beyond those derived from its access rule and schemas
 * (a slug taken, a list that does not exist): spread into the route's `detail`.
 */
export function alsoAnswers(...codes: ErrorCode[]): { 'x-error-codes': ErrorCode[] } {
  return { 'x-error-codes': codes }
}

/** A success without a body (a DELETE's 204), for a route's `detail`. */
export function noContent(description: string): { responses: Record<string, { description: string }> } {
  return { responses: { 204: { description } } }
}

/** What the error answers of a route follow from. */
export interface RouteFacts {
  /** `key`: the /api/v0 key chain; `admin`: the operator token. */
  guard: 'key' | 'admin'
  access?: { scope: string | null; public: boolean }
  body: boolean
  /** Has path parameters (an id or slug that may name nothing). */
  pathParams: boolean
  query: boolean
  /** Lower-case names of the header parameters. */
  headers: string[]
  /** Needs the database (everything but /metrics). */
  database: boolean
  also: ErrorCode[]
}

/**
 * The error codes a route can answer, in the chain's order, from
 * its guard, access rule and what it reads. The one place that knows which refusals a
 * route can give; the reference and its test both read it.
 */
export function errorCodesOf(route: RouteFacts): ErrorCode[] {
  const codes: ErrorCode[] = []
  if (route.guard === 'key') {
    codes.push('missing_api_key', 'malformed_api_key', 'invalid_api_key', 'expired_api_key', 'origin_not_allowed', 'ip_not_allowed')
    if (!route.access?.public) codes.push('public_key_not_allowed')
    if (route.access?.scope) codes.push('insufficient_scope')
  } else {
    codes.push('unauthorized')
  }
  codes.push('rate_limited')
  if (route.body || route.pathParams || route.query || route.headers.length > 0) codes.push('invalid_request')
  // The key chain screens bodies for size and type; the admin API leaves that to Elysia.
  if (route.body && route.guard === 'key') codes.push('payload_too_large', 'unsupported_media_type')
  if (route.pathParams) codes.push('not_found')
  if (route.headers.includes('idempotency-key')) codes.push('idempotency_key_reused')
  codes.push(...route.also)
  codes.push('internal_error')
  if (route.database) codes.push('unavailable')
  return [...new Set(codes)]
}

function factsOf(path: string, operation: Json): RouteFacts {
  const parameters = (operation.parameters ?? []) as { in: string; name: string }[]
  const security = (operation.security ?? []) as Json[]
  return {
    guard: security.some((s) => 'adminToken' in s) ? 'admin' : 'key',
    access: operation['x-access'] as RouteFacts['access'],
    body: operation.requestBody !== undefined,
    pathParams: parameters.some((p) => p.in === 'path'),
    query: parameters.some((p) => p.in === 'query'),
    headers: parameters.filter((p) => p.in === 'header').map((p) => p.name.toLowerCase()),
    database: path !== '/metrics',
    also: (operation['x-error-codes'] ?? []) as ErrorCode[],
  }
}

const RETRY_AFTER = {
  'Retry-After': { description: 'Whole seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
}

/** One answer per status, each listing its codes; the body is the `Error` envelope. */
function errorResponses(codes: ErrorCode[]): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) byStatus.set(errorStatus[code], [...(byStatus.get(errorStatus[code]) ?? []), code])
  const responses: Record<string, Json> = {}
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[status] = {
      description: group.map((code) => `\`${code}\`: ${CODE_MEANINGS[code]}`).join('; ') + '.',
      ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    }
  }
  return responses
}

/**
 * A schema as JSON Schema 2020-12 (what OpenAPI 3.1 uses) from what TypeBox and Elysia
 * emit: our `error` message keyword dropped (it stays on the validator), `nullable`
 * turned into a `null` type, Elysia's string-or-number coercion unions shown as the
 * number they are, and a `documentAs` hint (a query value that travels as a string)
 * shown as the type it stands for.
 */
export function cleanSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(cleanSchema)
  if (!isObject(schema) || '$ref' in schema) return schema
  let out: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'error' || key === 'nullable' || key === 'documentAs') continue
    if (key === 'properties' || key === 'patternProperties' || key === '$defs') out[key] = mapValues(value, cleanSchema)
    else if (SUBSCHEMA_KEYS.has(key)) out[key] = cleanSchema(value)
    else out[key] = value
  }
  if (isObject(schema.documentAs)) out = { ...schema.documentAs, ...(out.description ? { description: out.description } : {}) }
  if (schema.nullable === true) out = withNull(out)
  return numberOfCoercion(out) ?? out
}

const SUBSCHEMA_KEYS = new Set([
  'items',
  'additionalProperties',
  'not',
  'contains',
  'propertyNames',
  'anyOf',
  'oneOf',
  'allOf',
  'prefixItems',
])

function withNull(schema: Json): Json {
  const type = schema.type
  if (Array.isArray(type)) return type.includes('null') ? schema : { ...schema, type: [...type, 'null'] }
  if (typeof type === 'string') return { ...schema, type: [type, 'null'] }
  const { description, ...rest } = schema
  return { ...(description ? { description } : {}), anyOf: [rest, { type: 'null' }] }
}

/** `anyOf: [{type: string, format: integer}, {type: integer}]` (Elysia's t.Integer) as the integer. */
function numberOfCoercion(schema: Json): Json | undefined {
  const members = schema.anyOf
  if (!Array.isArray(members) || members.length !== 2) return undefined
  const text = members.find((m) => isObject(m) && m.type === 'string' && (m.format === 'integer' || m.format === 'numeric'))
  const number = members.find((m) => isObject(m) && (m.type === 'integer' || m.type === 'number')) as Json | undefined
  if (!text || !number) return undefined
  const { anyOf: _, ...outer } = schema
  return { ...number, ...outer }
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function mapValues(value: unknown, f: (v: unknown, key: string) => unknown): unknown {
  if (!isObject(value)) return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, f(v, k)]))
}

const errorEnvelope = {
  type: 'object',
  description: 'Every error answer. `code` is stable; `message` is for people.',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: {
        code: { $ref: '#/components/schemas/ErrorCode' },
        message: { type: 'string', description: 'What was seen and how to fix it' },
        requestId: { type: 'string', description: 'Also sent as the X-Request-Id header' },
        field: {
          type: 'string',
          description:
            'On a 400 about one field: its path, such as `events[3].timestamp`, `personId` or a query parameter such as `limit`. Absent when the whole request is at fault. Read this, not the message, to find the item refused.',
        },
      },
    },
  },
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']

/** The generated paths and schemas, finished into the document /openapi serves. */
export function finishDocument(generated: { paths: Json; components?: { schemas?: Json } }): Json {
  const paths: Json = {}
  for (const [path, item] of Object.entries(generated.paths)) {
    const finished: Json = {}
    for (const [method, value] of Object.entries(item as Json)) {
      if (!METHODS.includes(method) || !isObject(value)) {
        finished[method] = value
        continue
      }
      const { 'x-error-codes': _, ...operation } = value
      const cleaned = mapSchemas(operation)
      finished[method] = {
        ...cleaned,
        responses: {
          ...(mapValues(cleaned.responses ?? {}, describeSuccess) as Json),
          ...errorResponses(errorCodesOf(factsOf(path, value))),
        },
      }
    }
    paths[path] = finished
  }
  return {
    openapi: '3.1.0',
    info: {
      title: API_TITLE,
      version: '0.1.0',
      description:
        'Every /api/v0 request carries `Authorization: Bearer <key>`. Public keys (`pk_`) are limited to their allowed origins and the public endpoints; private keys (`sk_`) reach every endpoint within their scopes. Every error answer is `{"error": {"code", "message", "requestId"}}`, plus `field` (its path, such as `events[3].timestamp`) on a 400 about one field; each operation lists the codes it can answer.',
    },
    servers: [{ url: '/', description: 'The service that serves this document' }],
    tags: TAGS,
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'A public (pk_...) or private (sk_...) key: the prefix and 20 to 40 letters and digits.',
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN), for /admin/v0 and /metrics only.' },
      },
      schemas: {
        ...(mapValues(generated.components?.schemas ?? {}, cleanSchema) as Json),
        Error: errorEnvelope,
        ErrorCode: { type: 'string', enum: Object.keys(errorStatus), description: 'src/errors.ts: each maps to one HTTP status.' },
      },
    },
  }
}

const SUCCESS_TEXT: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content' }

/** Elysia's placeholder ("Response for status 200") in words. */
function describeSuccess(response: unknown, status: string): unknown {
  if (!isObject(response) || !/^Response for status \d+$/.test(String(response.description))) return response
  return { ...response, description: SUCCESS_TEXT[status] ?? `Status ${status}` }
}

/** Cleans the schemas an operation holds: parameters, request body, responses. */
function mapSchemas(operation: Json): Json {
  const out: Json = { ...operation }
  if (Array.isArray(operation.parameters)) {
    out.parameters = operation.parameters.map((p: Json) => ({ ...p, schema: cleanSchema(p.schema) }))
  }
  if (isObject(operation.requestBody)) out.requestBody = mapContent(operation.requestBody)
  if (isObject(operation.responses)) out.responses = mapValues(operation.responses, (r) => (isObject(r) ? mapContent(r) : r))
  return out
}

function mapContent(holder: Json): Json {
  if (!isObject(holder.content)) return holder
  return {
    ...holder,
    content: mapValues(holder.content, (media) => (isObject(media) ? { ...media, schema: cleanSchema(media.schema) } : media)),
  }
}
