import { t, ValidationError, type TSchema } from 'elysia'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ApiError } from '../../errors.ts'

/**
 * Validation pieces shared by the blog, flow and memory areas.
 *
 * Elysia converts a body before validating it: a string or an array where a record is
 * expected becomes `{"0": ...}` and passes. `strictBody` checks the body exactly as sent, in the route's `transform` (after the key
 * chain, before Elysia's own pass), so a wrong type answers 400 naming the field instead
 * of being stored in a shape the caller never sent.
 */
export function strictBody<S extends TSchema>(schema: S) {
  const check = TypeCompiler.Compile(schema)
  return {
    schema,
    transform({ body }: { body: unknown }): void {
      if (!check.Check(body)) throw new ValidationError('body', check, body)
    },
  }
}

/** PostgreSQL text cannot hold U+0000; refusing it up front avoids a 500 on insert. */
const NO_NUL = '^[^\\u0000]*$'

export function Text(options: { minLength?: number; maxLength: number; description?: string }) {
  const { minLength = 0, maxLength } = options
  return t.String({
    minLength,
    maxLength,
    pattern: NO_NUL,
    error: minLength > 0 ? `must be text of ${minLength}-${maxLength} characters (U+0000 excluded)` : `must be text of at most ${maxLength} characters (U+0000 excluded)`,
    ...(options.description ? { description: options.description } : {}),
  })
}

/** The same schema with a description for the API reference. */
export function describe<T extends TSchema>(schema: T, description: string): T {
  return { ...schema, description }
}

export const Uuid = t.String({
  format: 'uuid',
  // Elysia's uuid format also takes "urn:uuid:..." forms, which PostgreSQL refuses.
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  error: 'must be a UUID',
})

export const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const IdParams = t.Object({ id: Uuid })

/**
 * `limit` as the query string carries it. A pattern rather than `t.Integer`: Elysia's
 * coercion of numeric query values reports range errors without the field's name.
 */
export function limitQuery(defaultLimit: number) {
  return t.Optional(
    t.String({
      pattern: '^(?:[1-9][0-9]?|100)$',
      error: 'must be a whole number from 1 to 100',
      description: `Rows per page, 1-100 (default ${defaultLimit}).`,
    }),
  )
}

export const CursorQuery = t.Optional(
  t.String({
    maxLength: 300,
    pattern: '^[A-Za-z0-9_-]+$',
    error: 'must be the nextCursor of a previous page, unchanged',
    description: 'The `nextCursor` of the previous page; leave it out for the first page.',
  }),
)

export function pageSchema<T extends TSchema>(item: T) {
  return t.Object({
    data: t.Array(item),
    nextCursor: t.Nullable(t.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  })
}

export interface Page<T> {
  data: T[]
  nextCursor: string | null
}

/** Cursors are base64url JSON, opaque to callers. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

export function decodeCursorJson(cursor: string): unknown {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
}

export function foreignCursor(): ApiError {
  return invalidField(
    'cursor',
    'it is not a cursor this API gave out for this query. Pass the nextCursor of the previous page unchanged (with the same filters), or leave it out for the first page',
    'query',
  )
}

/** A 400 for a field, worded like the schema failures src/http/errors.ts renders. */
export function invalidField(field: string, reason: string, where: 'body' | 'query' | 'headers' = 'body') {
  return new ApiError('invalid_request', `Invalid ${where} field "${field}": ${reason}.`)
}

const MAX_DEPTH = 8
const MAX_KEY_LENGTH = 128

/**
 * What a schema cannot say about free-form JSON (flow input, memory metadata): U+0000 in
 * any string or name (PostgreSQL refuses it), nesting over 8 levels, names over 128
 * characters, and a serialized size over `maxBytes`. Throws invalid_request naming the
 * first offender.
 */
export function assertStorableJson(value: unknown, field: string, maxBytes: number): void {
  walk(value, field, 0)
  const bytes = Buffer.byteLength(JSON.stringify(value))
  if (bytes > maxBytes) throw invalidField(field, `is ${bytes} bytes as JSON; the limit is ${maxBytes}`)
}

function walk(value: unknown, path: string, depth: number): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw invalidField(path, 'contains the character U+0000, which cannot be stored; remove it')
    return
  }
  if (typeof value !== 'object' || value === null) return
  if (depth >= MAX_DEPTH) throw invalidField(path, `is nested more than ${MAX_DEPTH} levels deep; flatten it`)
  if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1))
    return
  }
  for (const [key, item] of Object.entries(value)) {
    const inner = `${path}.${key}`
    if (key.length > MAX_KEY_LENGTH) throw invalidField(inner.slice(0, 200), `property names are limited to ${MAX_KEY_LENGTH} characters`)
    if (key.includes('\u0000')) throw invalidField(path, 'has a property name with the character U+0000; remove it')
    walk(item, inner, depth + 1)
  }
}

/** The SQLSTATE of a driver error, looked up through Drizzle's wrapping. */
export function sqlState(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

export const UNIQUE_VIOLATION = '23505'
export const FOREIGN_KEY_VIOLATION = '23503'
/** What ON DELETE RESTRICT raises (NO ACTION raises 23503). */
export const RESTRICT_VIOLATION = '23001'
