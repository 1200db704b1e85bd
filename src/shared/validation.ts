import { t, type TSchema } from 'elysia'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ApiError, causeCodes } from '../errors.ts'
import { Chars, codePointLength, cutToCharacters } from './characters.ts'
import { closestName, unknownFieldMessage, validationProblem } from './validation-message.ts'

/**
 * Request checks shared by everything that reads input (the API areas, the admin API, the
 * dashboard, the JSON body parser, the key rules): what TypeBox schemas cannot say on
 * their own, and the error wording that goes with it.
 */

// ---- Field errors ------------------------------------------------------------------

/** A property name is echoed in the message; a huge one is cut. */
const MAX_ECHOED_PATH = 200

/** A 400 for a field, worded like the schema failures src/http/errors.ts renders, naming it in `field` too. */
export function invalidField(field: string, reason: string, where: 'body' | 'query' | 'headers' = 'body'): ApiError {
  const shown = cutToCharacters(field, MAX_ECHOED_PATH)
  return new ApiError('invalid_request', `Invalid ${where} field "${shown}": ${reason}.`, { field: shown })
}

/** A 400 about the whole body (`field` absent), or about one field of it. */
function invalidAt(path: string, reason: string): ApiError {
  return path === '' ? new ApiError('invalid_request', `Invalid body: it ${reason}.`) : invalidField(path, reason)
}

/** `events[3]` / `people[0]` for batches, '' for a single record. */
export function recordPath(batchKey: string | null, index: number): string {
  return batchKey === null ? '' : `${batchKey}[${index}]`
}

export function fieldPath(record: string, field: string): string {
  return record === '' ? field : `${record}.${field}`
}

// ---- Ids ---------------------------------------------------------------------------

export { IdParams, isUuid, Uuid } from './uuid.ts'

// ---- Text ----------------------------------------------------------------------------

/**
 * What PostgreSQL text and jsonb can hold: no U+0000, and no lone UTF-16 surrogate (valid
 * in a JSON string, refused by jsonb, and silently turned into U+FFFD in text). The one
 * rule every stored string goes through, as native scans rather than a regex
 * (docs/decisions.md, "Hostile input").
 */
export function isStorableText(value: string): boolean {
  return value.isWellFormed() && !value.includes('\u0000')
}

const UNSTORABLE = 'contains U+0000 or a lone UTF-16 surrogate (\\ud800-\\udfff without its pair), which cannot be stored; remove it'

/** The 400 for a string that fails isStorableText. */
export function unstorableField(field: string, where: 'body' | 'query' | 'headers' = 'body'): ApiError {
  if (field === '') return new ApiError('invalid_request', `Invalid ${where}: it ${UNSTORABLE}.`)
  return invalidField(field, UNSTORABLE, where)
}

/**
 * Every string and property name of a parsed body, at any depth, through isStorableText;
 * throws naming the first offender (`events[2].properties.note`). Bodies reach it already
 * screened for depth (src/http/json-body.ts), so the recursion is bounded. Paths are built
 * only once something fails: building them on every key tripled the cost of the check.
 */
export function assertStorableText(value: unknown, path: string): void {
  if (!allStorable(value)) findUnstorable(value, path)
}

function allStorable(value: unknown): boolean {
  if (typeof value === 'string') return isStorableText(value)
  if (typeof value !== 'object' || value === null) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!allStorable(value[i])) return false
    return true
  }
  for (const key in value) {
    if (key === '__proto__' || !isStorableText(key) || !allStorable((value as Record<string, unknown>)[key])) return false
  }
  return true
}

function findUnstorable(value: unknown, path: string): void {
  if (typeof value === 'string') {
    if (!isStorableText(value)) throw unstorableField(path)
    return
  }
  if (typeof value !== 'object' || value === null) return
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) findUnstorable(value[i], `${path}[${i}]`)
    return
  }
  for (const key in value) {
    if (!isStorableText(key)) throw invalidAt(path, `has a property name that ${UNSTORABLE}`)
    // JSON.parse makes "__proto__" an own property, but the first spread or merge of the
    // object turns it into the prototype (metadata {"__proto__": null} was a 500).
    if (key === '__proto__') throw invalidAt(path, 'has the property name "__proto__", which is not accepted; rename it')
    findUnstorable((value as Record<string, unknown>)[key], fieldPath(path, key))
  }
}

/** Query strings cannot carry a lone surrogate (URL decoding makes U+FFFD), but can carry U+0000. */
const NO_NUL = '^[^\\u0000]*$'

/** Text of a length in characters (code points: src/shared/characters.ts), without U+0000. */
export function Text(options: { minLength?: number; maxLength: number; description?: string }) {
  const { minLength = 0, maxLength } = options
  return Chars({
    minLength,
    maxLength,
    pattern: NO_NUL,
    error:
      minLength > 0
        ? `must be text of ${minLength}-${maxLength} characters (U+0000 excluded)`
        : `must be text of at most ${maxLength} characters (U+0000 excluded)`,
    // The limit is in every description, so the API reference states it in words too.
    description: `${options.description ? `${options.description} ` : ''}${minLength > 0 ? `${minLength}-${maxLength}` : `At most ${maxLength}`} characters.`,
  })
}

/** The same schema with a description for the API reference. */
export function describe<T extends TSchema>(schema: T, description: string): T {
  return { ...schema, description }
}

// ---- Dates -------------------------------------------------------------------------

/**
 * The instants any date-time field, query filter or cursor may hold: years 1970 to 9999.
 * PostgreSQL's timestamptz refuses year 0 and years past 294276 (a 500 before this), and
 * nothing this service stores lies outside (docs/decisions.md). Event timestamps have a
 * narrower window of their own (src/areas/analytics/model.ts).
 */
export const EARLIEST_DATE = Date.UTC(1970, 0, 1)
export const LATEST_DATE = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
export const DATE_RANGE_TEXT = 'from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z'

export function isAcceptedDate(time: Date): boolean {
  const ms = time.getTime()
  return ms >= EARLIEST_DATE && ms <= LATEST_DATE
}

/** The instant of a date-time the schema has let through, or a 400 naming the field. */
export function acceptedDate(value: string, field: string, where: 'body' | 'query' = 'body'): Date {
  const time = new Date(value)
  if (Number.isNaN(time.getTime()))
    throw invalidField(field, `${value.slice(0, 40)} is not a real date-time; use an ISO-8601 date-time like "2026-01-31T12:00:00Z"`, where)
  if (!isAcceptedDate(time)) throw invalidField(field, `${value.slice(0, 40)} is outside the accepted range, ${DATE_RANGE_TEXT}`, where)
  return time
}

// ---- Bodies ------------------------------------------------------------------------

/**
 * The schema with `additionalProperties: false` on every object of fixed fields, at any
 * depth (batch items, a key's rateLimit): an unknown field is a 400 naming it, never
 * dropped silently. Free-form JSON (`t.Record`: properties, metadata, input) is left open.
 * The API reference shows the same strict schema.
 */
export function strictObjects<S extends TSchema>(schema: S): S {
  const node = schema as TSchema & Record<string, unknown>
  const copy: Record<string | symbol, unknown> = { ...node }
  if (node.type === 'object' && node.properties && !node.patternProperties) {
    copy.additionalProperties = false
    copy.properties = Object.fromEntries(
      Object.entries(node.properties as Record<string, TSchema>).map(([name, inner]) => [name, strictObjects(inner)]),
    )
  }
  for (const key of ['anyOf', 'allOf', 'oneOf'] as const) {
    if (Array.isArray(node[key])) copy[key] = (node[key] as TSchema[]).map(strictObjects)
  }
  if (node.items && typeof node.items === 'object' && !Array.isArray(node.items)) copy.items = strictObjects(node.items as TSchema)
  return copy as S
}

/**
 * Checks the body exactly as sent against the strict form of its schema. A route passes
 * `check` as its `transform` hook, which runs after the key chain and before Elysia's own
 * pass. Elysia converts a body before
 * validating it (a string or an array where a record is expected becomes `{"0": ...}`) and
 * drops unknown fields; here both answer 400 naming the field instead. Every /api/v0 and
 * /admin/v0 body goes through this (test/api/strict-bodies.test.ts walks the routes).
 */
export function strictBody<S extends TSchema>(schema: S) {
  const strict = strictObjects(schema)
  const compiled = TypeCompiler.Compile(strict)
  return {
    schema: strict,
    accepts: (body: unknown): boolean => compiled.Check(body),
    /** Throws 400 `invalid_request` naming the first field at fault. */
    check(request: { body: unknown }): void {
      // Worded where Elysia's own ValidationErrors are (src/http/errors.ts); an ApiError
      // spares the example value and the dump Elysia's error builds for its message.
      if (!compiled.Check(request.body)) {
        const { message, field } = validationProblem('body', compiled.Errors(request.body))
        throw new ApiError('invalid_request', message, { field })
      }
    },
  }
}

/**
 * A body that is one record or `{ [batchKey]: [records] }`. TypeBox reports a failed union
 * as "Expected union value" at the root, which names no field; so the body is checked
 * strictly against the shape the caller chose, and a failure names the field:
 * `Invalid body field "events[3].eventType": ...`. A near miss of the batch key
 * (`{"evnts": [...]}`) is named as such, not as a record missing its fields.
 */
export function oneOrBatch<One extends TSchema, Batch extends TSchema>(one: One, batch: Batch, batchKey: string) {
  const strictOne = strictBody(one)
  const strictBatch = strictBody(batch)
  const oneFields = Object.keys((one as { properties?: object }).properties ?? {})
  return {
    schema: t.Union([strictOne.schema, strictBatch.schema]),
    // Hooks name what they read (`{ body }`): Elysia then builds only that part of the
    // request context (see src/http/key-chain-plugin.ts).
    /** Throws 400 `invalid_request` naming the first field at fault. */
    check(request: { body: unknown }): void {
      const { body } = request
      const isBatch = typeof body === 'object' && body !== null && batchKey in body
      const strict = isBatch ? strictBatch : strictOne
      // A body that passes has no unknown field, so no near miss: the search runs only for
      // a refusal (a page view's hot path skips it).
      if (strict.accepts(body)) return
      if (!isBatch && typeof body === 'object' && body !== null && !Array.isArray(body)) {
        const typo = Object.keys(body).find((key) => !oneFields.includes(key) && closestName(key, [batchKey]))
        if (typo !== undefined) {
          const shown = cutToCharacters(typo, MAX_ECHOED_PATH)
          throw new ApiError('invalid_request', unknownFieldMessage('body', shown, typo, [batchKey]), { field: shown })
        }
      }
      strict.check(request)
    },
  }
}

// ---- Free-form JSON ----------------------------------------------------------------

/**
 * What each free-form JSON field (event, person and company `properties`, flow `input`,
 * memory `metadata`) may weigh, as JSON in UTF-8.
 */
export const MAX_JSON_FIELD_BYTES = 16 * 1024

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
  'Custom attributes: a JSON object, at most 50 top-level properties, nested at most 8 levels, 16 KiB as JSON; property names at most 128 characters.',
)

const MAX_DEPTH = 8
const MAX_KEY_LENGTH = 128

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
    if (!isStorableText(value)) throw unstorableField(path)
    return
  }
  if (typeof value !== 'object' || value === null) return
  if (level > MAX_DEPTH) throw invalidField(path, `is nested more than ${MAX_DEPTH} levels deep; flatten it`)
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) assertStorable(item, `${path}[${i}]`, level + 1)
    return
  }
  for (const [key, item] of Object.entries(value)) {
    const inner = fieldPath(path, key)
    if (key.length > MAX_KEY_LENGTH && codePointLength(key) > MAX_KEY_LENGTH) {
      throw invalidField(inner, `property names are limited to ${MAX_KEY_LENGTH} characters`)
    }
    if (!isStorableText(key)) throw invalidField(path, `has a property name that ${UNSTORABLE}`)
    assertStorable(item, inner, level + 1)
  }
}

/** assertStorable for one free-form field (properties, flow input, memory metadata), plus its size as JSON. */
export function assertStorableJson(value: unknown, field: string, maxBytes = MAX_JSON_FIELD_BYTES): void {
  assertStorable(value, field, 1)
  assertJsonSize(value, field, maxBytes)
}

/** The size limit of a free-form field, on a value whose strings are already checked. */
export function assertJsonSize(value: unknown, field: string, maxBytes = MAX_JSON_FIELD_BYTES): void {
  const json = JSON.stringify(value)
  // UTF-8 has at most 3 bytes per UTF-16 unit: most values need no byte count at all.
  if (json.length * 3 <= maxBytes) return
  const bytes = Buffer.byteLength(json)
  if (bytes > maxBytes) throw invalidField(field, `is ${bytes} bytes as JSON; the limit is ${maxBytes} (${maxBytes / 1024} KiB)`)
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
