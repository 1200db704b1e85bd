import { t, ValidationError, type TSchema } from 'elysia'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ApiError, causeCodes } from '../../errors.ts'

/**
 * Request checks shared by the API areas: what TypeBox schemas cannot say on their own,
 * and the error wording that goes with it.
 */

// ---- Field errors ------------------------------------------------------------------

/** A 400 for a field, worded like the schema failures src/http/errors.ts renders. */
export function invalidField(field: string, reason: string, where: 'body' | 'query' | 'headers' = 'body'): ApiError {
  return new ApiError('invalid_request', `Invalid ${where} field "${field}": ${reason}.`)
}

/** `events[3]` / `people[0]` for batches, '' for a single record. */
export function recordPath(batchKey: string | null, index: number): string {
  return batchKey === null ? '' : `${batchKey}[${index}]`
}

export function fieldPath(record: string, field: string): string {
  return record === '' ? field : `${record}.${field}`
}

// ---- Ids ---------------------------------------------------------------------------

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

/** Tells an id from a slug, and a cursor's id from a forged one. */
export const UUID_SHAPE = new RegExp(UUID_PATTERN)

export const Uuid = t.String({
  format: 'uuid',
  // Elysia's uuid format also takes "urn:uuid:..." forms, which PostgreSQL refuses.
  pattern: UUID_PATTERN,
  error: 'must be a UUID',
})

export const IdParams = t.Object({ id: Uuid })

// ---- Text --------------------------------------------------------------------------

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

// ---- Bodies ------------------------------------------------------------------------

/**
 * Checks the body exactly as sent, in the route's `transform` (after the key chain, before
 * Elysia's own pass). Elysia converts a body before validating it: a string or an array
 * where a record is expected becomes `{"0": ...}` and passes; here a wrong type answers
 * 400 naming the field instead of being stored in a shape the caller never sent.
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

/**
 * A body that is one record or `{ [batchKey]: [records] }`. TypeBox reports a failed union
 * as "Expected union value" at the root, which names no field; so the body is checked
 * strictly against the shape the caller chose, and a failure names the field:
 * `Invalid body field "events[3].eventType": ...`.
 */
export function oneOrBatch<One extends TSchema, Batch extends TSchema>(one: One, batch: Batch, batchKey: string) {
  const strictOne = strictBody(one)
  const strictBatch = strictBody(batch)
  return {
    schema: t.Union([one, batch]),
    // Hooks name what they read (`{ body }`): Elysia then builds only that part of the
    // request context (see src/access/plugin.ts).
    transform({ body }: { body: unknown }): void {
      const isBatch = typeof body === 'object' && body !== null && batchKey in body
      ;(isBatch ? strictBatch : strictOne).transform({ body })
    },
  }
}

// ---- Free-form JSON ----------------------------------------------------------------

/** A JSON object of the caller's own attributes (properties, metadata, flow input). */
export function JsonObject(maxProperties: number, description: string) {
  return t.Record(t.String(), t.Unknown(), {
    maxProperties,
    error: `must be a JSON object with at most ${maxProperties} properties`,
    description,
  })
}

/** Custom attributes of events, people and companies. */
export const PropertyBag = JsonObject(
  50,
  'Custom attributes: a JSON object, at most 50 top-level properties, nested at most 8 levels.',
)

const MAX_DEPTH = 8
const MAX_KEY_LENGTH = 128
/** A property name is echoed in the message; a huge one is cut. */
const MAX_ECHOED_PATH = 200

/**
 * What a schema cannot say about free-form JSON but PostgreSQL refuses or we do not want:
 * U+0000 in any string or property name (text and jsonb cannot hold it), nesting deeper
 * than 8 levels, and property names over 128 characters. Throws invalid_request naming
 * the first offender.
 *
 * `level` counts from the free-form object: the object itself is level 1, so a record
 * that holds such objects (an event with its properties) is checked whole from level 0.
 */
export function assertStorable(value: unknown, path: string, level = 0): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw invalidField(path, 'contains the character U+0000, which cannot be stored; remove it')
    return
  }
  if (typeof value !== 'object' || value === null) return
  if (level > MAX_DEPTH) throw invalidField(path, `is nested more than ${MAX_DEPTH} levels deep; flatten it`)
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertStorable(item, `${path}[${i}]`, level + 1))
    return
  }
  for (const [key, item] of Object.entries(value)) {
    const inner = fieldPath(path, key)
    if (key.length > MAX_KEY_LENGTH) {
      throw invalidField(inner.slice(0, MAX_ECHOED_PATH), `property names are limited to ${MAX_KEY_LENGTH} characters`)
    }
    if (key.includes('\u0000')) throw invalidField(path, 'has a property name with the character U+0000; remove it')
    assertStorable(item, inner, level + 1)
  }
}

/** assertStorable for one free-form field (flow input, memory metadata), plus its size as JSON. */
export function assertStorableJson(value: unknown, field: string, maxBytes: number): void {
  assertStorable(value, field, 1)
  const bytes = Buffer.byteLength(JSON.stringify(value))
  if (bytes > maxBytes) throw invalidField(field, `is ${bytes} bytes as JSON; the limit is ${maxBytes}`)
}

// ---- Database errors ---------------------------------------------------------------

/** The SQLSTATE of a driver error, looked up through Drizzle's wrapping. */
export function sqlState(error: unknown): string | undefined {
  return causeCodes(error).find((code) => /^[0-9A-Z]{5}$/.test(code))
}

export const UNIQUE_VIOLATION = '23505'
export const FOREIGN_KEY_VIOLATION = '23503'
/** What ON DELETE RESTRICT raises (NO ACTION raises 23503). */
export const RESTRICT_VIOLATION = '23001'
export const DEADLOCK_DETECTED = '40P01'
