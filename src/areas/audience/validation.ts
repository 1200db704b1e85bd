import { t, ValidationError, type TSchema } from 'elysia'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ApiError } from '../../errors.ts'

/**
 * A body that is one record or `{ [batchKey]: [records] }`. TypeBox reports a failed union
 * as "Expected union value" at the root, which names no field; so the route's `transform`
 * (after the key chain, before Elysia validates) checks the shape the caller chose, and a
 * failure names the field: `Invalid body field "events[3].eventType": ...`.
 */
export function oneOrBatch<One extends TSchema, Batch extends TSchema>(one: One, batch: Batch, batchKey: string) {
  const checkOne = TypeCompiler.Compile(one)
  const checkBatch = TypeCompiler.Compile(batch)
  return {
    schema: t.Union([one, batch]),
    transform({ body }: { body: unknown }): void {
      const isBatch = typeof body === 'object' && body !== null && batchKey in body
      const check = isBatch ? checkBatch : checkOne
      if (!check.Check(body)) throw new ValidationError('body', check, body)
    },
  }
}

/** A 400 for a field, worded like the schema failures src/http/errors.ts renders. */
export function invalidField(field: string, reason: string, where: 'body' | 'query' = 'body'): ApiError {
  return new ApiError('invalid_request', `Invalid ${where} field "${field}": ${reason}.`)
}

/** `events[3]` / `people[0]` for batches, '' for a single record. */
export function recordPath(batchKey: string | null, index: number): string {
  return batchKey === null ? '' : `${batchKey}[${index}]`
}

export function fieldPath(record: string, field: string): string {
  return record === '' ? field : `${record}.${field}`
}

const MAX_DEPTH = 8
const MAX_KEY_LENGTH = 128

/**
 * What a schema cannot say about free-form JSON but PostgreSQL refuses or we do not want:
 * U+0000 in any string (text and jsonb cannot hold it), nesting deeper than 8 levels, and
 * property names over 128 characters. Throws invalid_request naming the first offender.
 */
export function assertStorable(value: unknown, path: string, depth = 0): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw invalidField(path, 'contains the character U+0000, which cannot be stored; remove it')
    return
  }
  if (typeof value !== 'object' || value === null) return
  if (depth > MAX_DEPTH) throw invalidField(path, `is nested more than ${MAX_DEPTH} levels deep; flatten it`)
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertStorable(item, `${path}[${i}]`, depth + 1))
    return
  }
  for (const [key, item] of Object.entries(value)) {
    const inner = path === '' ? key : `${path}.${key}`
    if (key.length > MAX_KEY_LENGTH) throw invalidField(inner, `property names are limited to ${MAX_KEY_LENGTH} characters`)
    if (key.includes('\u0000')) throw invalidField(path, 'has a property name with the character U+0000; remove it')
    assertStorable(item, inner, depth + 1)
  }
}

/** A bag of custom attributes: a JSON object of at most 50 top-level properties. */
export const PropertyBag = t.Record(t.String(), t.Unknown(), {
  maxProperties: 50,
  error: 'must be a JSON object with at most 50 properties',
  description: 'Custom attributes: a JSON object, at most 50 top-level properties, nested at most 8 levels.',
})

export const Uuid = t.String({
  format: 'uuid',
  // Elysia's uuid format also takes "urn:uuid:..." forms, which PostgreSQL refuses.
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  error: 'must be a UUID',
})

export const IdParams = t.Object({ id: Uuid })
