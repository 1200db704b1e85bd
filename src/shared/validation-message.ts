import { Kind, type TSchema } from '@sinclair/typebox'
import { Errors, ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { codePointLength, cutToCharacters } from './characters.ts'

/**
 * Schema failures in words a client can act on. TypeBox's own messages ("Expected union
 * value", "Expected array length to be less or equal to 500") name neither the field nor
 * the fix, so none of them is ever shown: each error kind is worded here from the schema
 * (or its `error` option, which wins), and says what was sent where that helps.
 */

/** Where the failing value came from, as Elysia names it. */
export type Where = 'body' | 'query' | 'params' | 'headers' | 'cookie' | string

/** A property name or path is echoed in the message; a huge one is cut. */
const MAX_ECHOED = 200

/** How many errors are read to find an unknown field (a 1000-item batch can yield many). */
const MAX_ERRORS_READ = 100

/** A failed check in words, and the path of the field at fault (absent when it is the whole value). */
export interface ValidationProblem {
  message: string
  field?: string
}

/** The problem to report for a failed check: the first unknown field if any, else the first error. */
export function validationProblem(where: Where, errors: Iterable<ValueError>): ValidationProblem {
  const picked = pick(errors)
  if (!picked) return { message: `Invalid ${where}.` }
  const error = within(picked)
  const field = fieldName(error.path)
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    return { message: unknownFieldMessage(where, field, lastSegment(error.path), knownNames(error.schema)), field }
  }
  const reason = reasonOf(error)
  return field ? { message: `Invalid ${where} field "${field}": ${reason}.`, field } : { message: `Invalid ${where}: ${reason}.` }
}

/**
 * `Unknown body field "people[3].fistName"; did you mean "firstName"?`, or the fields the
 * object takes when no known name is close.
 */
export function unknownFieldMessage(where: Where, field: string, name: string, known: readonly string[]): string {
  const suggestion = closestName(name, known)
  const head = `Unknown ${where} field "${field}"`
  if (suggestion) return `${head}; did you mean "${suggestion}"?`
  if (known.length === 0) return `${head}: this object takes no fields; remove it.`
  if (known.length === 1) return `${head}: remove it; the only field here is "${known[0]}".`
  return `${head}: remove it; the fields here are ${list(
    known.map((k) => `"${k}"`),
    'and',
  )}.`
}

// ---- Near misses ---------------------------------------------------------------------

/**
 * The known name a client most likely meant: the one at the smallest edit distance
 * (case ignored, so `firstname` finds `firstName`), if that distance is small for the
 * name's length (a third of it, at least 1, at most 3). Ties go to the earlier name.
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const wanted = name.toLowerCase()
  const limit = Math.min(3, Math.max(1, Math.floor(wanted.length / 3)))
  let best: string | undefined
  let bestDistance = limit + 1
  for (const candidate of known) {
    const distance = editDistance(wanted, candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0
  // Names over 64 characters are no typo of a schema's field.
  if (Math.abs(a.length - b.length) > 3 || a.length > 64 || b.length > 64) return Infinity
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i])
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1)
      rows[i]![j] = d
    }
  }
  return rows[a.length]![b.length]!
}

// ---- Which error ---------------------------------------------------------------------

/**
 * An unknown field is the likeliest cause of any other failure beside it (`{"slg": ...}`
 * also misses `slug`), so it is reported first, wherever it is; inside a union, the
 * variant of the value's own JSON type is looked into.
 */
function pick(errors: Iterable<ValueError>): ValueError | undefined {
  let first: ValueError | undefined
  let read = 0
  for (const error of errors) {
    first ??= error
    const unknown = unknownIn(error)
    if (unknown) return unknown
    if (++read >= MAX_ERRORS_READ) break
  }
  return first
}

/**
 * A union's failure inside the one variant of the value's JSON type, when that variant is
 * an object or list: `rateLimit.limit` names the field at fault, `rateLimit` only its parent.
 */
function within(error: ValueError): ValueError {
  if (error.type !== ValueErrorType.Union) return error
  const variant = matchingVariant(error)
  if (variant === undefined) return error
  const kind = ((error.schema as { anyOf?: TSchema[] }).anyOf ?? [])[variant]?.[Kind]
  if (kind !== 'Object' && kind !== 'Array') return error
  // Read afresh: pick() may have drained the union's own iterators looking for unknown fields.
  const variantSchema = ((error.schema as { anyOf?: TSchema[] }).anyOf ?? [])[variant]!
  const inner = Errors(variantSchema, error.value).First()
  return inner ? within({ ...inner, path: error.path + inner.path }) : error
}

function unknownIn(error: ValueError): ValueError | undefined {
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return error
  if (error.type !== ValueErrorType.Union) return undefined
  const variant = matchingVariant(error)
  if (variant === undefined) return undefined
  for (const inner of error.errors[variant] ?? []) {
    const found = unknownIn(inner)
    if (found) return found
  }
  return undefined
}

/** The index of the one union variant whose JSON type is the value's, if exactly one is. */
function matchingVariant(error: ValueError): number | undefined {
  const variants = (error.schema as { anyOf?: TSchema[] }).anyOf ?? []
  const type = jsonType(error.value)
  const matches = variants.flatMap((variant, i) => (acceptsType(variant, type) ? [i] : []))
  return matches.length === 1 ? matches[0] : undefined
}

function acceptsType(schema: TSchema, type: string): boolean {
  switch (schema[Kind]) {
    case 'String':
      return type === 'string'
    case 'Number':
    case 'Integer':
      return type === 'number'
    case 'Boolean':
      return type === 'boolean'
    case 'Null':
      return type === 'null'
    case 'Array':
      return type === 'array'
    case 'Object':
    case 'Record':
      return type === 'object'
    case 'Literal':
      return jsonType(constOf(schema)) === type
    case 'Union':
      return ((schema as { anyOf?: TSchema[] }).anyOf ?? []).some((variant) => acceptsType(variant, type))
    default:
      return true
  }
}

// ---- Words -----------------------------------------------------------------------------

function reasonOf(error: ValueError): string {
  const custom = customError(error.schema)
  // TypeBox reports a missing required field twice: as missing, and as a wrong value.
  if (error.type === ValueErrorType.ObjectRequiredProperty || error.value === undefined) {
    const rule = custom ?? expectation(error.schema)
    return rule.startsWith('must ') ? `is missing; it is required and ${rule}` : `is missing; it is required (${rule})`
  }
  if (custom) return custom
  return `${expectation(error.schema)}; got ${seen(error.value)}`
}

function customError(schema: TSchema): string | undefined {
  const custom = (schema as { error?: unknown }).error
  return typeof custom === 'string' ? custom : undefined
}

/** What a schema takes, as "must ..." words. */
export function expectation(schema: TSchema): string {
  const custom = customError(schema)
  if (custom) return custom
  const s = schema as Record<string, unknown>
  switch (schema[Kind]) {
    case 'String':
      if (Array.isArray(s.enum))
        return `must be one of ${list(
          s.enum.map((v) => JSON.stringify(v)),
          'or',
        )}`
      // A limit in characters (src/shared/characters.ts) is worded as the reference shows it.
      return `must be ${stringShape(isStringSchema(s.documentAs) ? { ...s, ...s.documentAs } : s)}`
    case 'Integer':
      return `must be a whole number${range(s)}`
    case 'Number':
      return `must be a number${range(s)}`
    case 'Boolean':
      return 'must be true or false'
    case 'Null':
      return 'must be null'
    case 'Literal':
      return `must be ${JSON.stringify(s.const)}`
    case 'Array':
      return `must be a list${count(s.minItems, s.maxItems, 'item', 'items')}`
    case 'Record':
      return `must be a JSON object${count(undefined, s.maxProperties, 'property', 'properties', 'with')}`
    case 'Object': {
      const names = knownNames(schema).map((k) => `"${k}"`)
      if (names.length === 0) return 'must be a JSON object'
      const min = typeof s.minProperties === 'number' ? s.minProperties : 0
      const fields = names.length === 1 ? `the field ${names[0]}` : `the fields ${list(names, 'and')}`
      if (min > 0) return `must be a JSON object with at least ${min === 1 ? 'one' : min} of ${fields}`
      return `must be a JSON object with ${fields}`
    }
    case 'Union': {
      const variants = (s.anyOf as TSchema[] | undefined) ?? []
      if (variants.length > 0 && variants.every((v) => v[Kind] === 'Literal')) {
        return `must be one of ${list(
          variants.map((v) => JSON.stringify(constOf(v))),
          'or',
        )}`
      }
      const nullable = variants.some((v) => v[Kind] === 'Null')
      const words = variants
        .filter((v) => v[Kind] !== 'Null' && !isNumericText(v))
        .map(expectation)
        .join(', or ')
      return nullable ? `${words}, or null` : words
    }
    default:
      return 'must have the type the API reference (/docs) shows'
  }
}

function isStringSchema(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'string'
}

/** Elysia's t.Integer and t.Numeric also take the number as text: not worth a word. */
function isNumericText(schema: TSchema): boolean {
  const format = (schema as { format?: unknown }).format
  return schema[Kind] === 'String' && (format === 'integer' || format === 'numeric')
}

const FORMATS: Record<string, string> = {
  email: 'an email address like "ada@example.com"',
  'date-time': 'an ISO-8601 date-time like "2026-01-31T12:00:00Z"',
  date: 'a date like "2026-01-31"',
  uuid: 'a UUID',
  uri: 'a URL like "https://example.com/"',
}

function stringShape(s: Record<string, unknown>): string {
  const format = typeof s.format === 'string' ? FORMATS[s.format] : undefined
  const length = amount(s.minLength, s.maxLength, 'character', 'characters')
  if (format) return `${format}${length ? `, ${length}` : ''}`
  const pattern = typeof s.pattern === 'string' ? ` matching the pattern ${s.pattern}` : ''
  return `text${length ? ` of ${length}` : ''}${pattern}`
}

/** " of 1-500 items", " of at most 500 items", " of at least 1 item", or "". */
function count(min: unknown, max: unknown, one: string, many: string, preposition = 'of'): string {
  const words = amount(min, max, one, many)
  return words ? ` ${preposition} ${words}` : ''
}

/** "1-500 items", "at most 500 items", "at least 1 item", or "". */
function amount(min: unknown, max: unknown, one: string, many: string): string {
  const lo = typeof min === 'number' && min > 0 ? min : undefined
  const hi = typeof max === 'number' ? max : undefined
  if (lo !== undefined && hi !== undefined) return `${lo}-${hi} ${many}`
  if (hi !== undefined) return `at most ${hi} ${hi === 1 ? one : many}`
  if (lo !== undefined) return `at least ${lo} ${lo === 1 ? one : many}`
  return ''
}

function range(s: Record<string, unknown>): string {
  const lo =
    typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? `more than ${s.exclusiveMinimum}` : undefined
  const hi =
    typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? `less than ${s.exclusiveMaximum}` : undefined
  const multiple = typeof s.multipleOf === 'number' ? `, a multiple of ${s.multipleOf}` : ''
  if (typeof lo === 'number' && typeof hi === 'number') return ` from ${lo} to ${hi}${multiple}`
  const bounds = [
    lo === undefined ? '' : typeof lo === 'number' ? `at least ${lo}` : lo,
    hi === undefined ? '' : typeof hi === 'number' ? `at most ${hi}` : hi,
  ]
  const words = bounds.filter(Boolean).join(' and ')
  return `${words ? ` ${words}` : ''}${multiple}`
}

/** What was sent, short: never the whole of a long value. */
export function seen(value: unknown): string {
  switch (jsonType(value)) {
    case 'undefined':
      return 'nothing'
    case 'null':
      return 'null'
    case 'string': {
      const text = value as string
      return text.length <= 40 ? JSON.stringify(text) : `text of ${codePointLength(text)} characters`
    }
    case 'number':
      return Number.isFinite(value) ? String(value) : 'a number out of range'
    case 'boolean':
      return String(value)
    case 'array': {
      const n = (value as unknown[]).length
      return n === 0 ? 'an empty list' : `a list of ${n} ${n === 1 ? 'item' : 'items'}`
    }
    default: {
      const n = Object.keys(value as object).length
      return n === 0 ? 'an empty object' : `an object with ${n} ${n === 1 ? 'property' : 'properties'}`
    }
  }
}

function jsonType(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function constOf(schema: TSchema): unknown {
  return (schema as { const?: unknown }).const
}

function knownNames(schema: TSchema): string[] {
  return Object.keys((schema as { properties?: object }).properties ?? {})
}

function list(items: string[], conjunction: 'and' | 'or'): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} ${conjunction} ${items.at(-1)}`
}

function unescapePointer(part: string): string {
  return part.replace(/~1/g, '/').replace(/~0/g, '~')
}

function lastSegment(path: string): string {
  return unescapePointer(path.slice(path.lastIndexOf('/') + 1))
}

/** `/events/3/eventType` as `events[3].eventType`, JSON Pointer escapes undone, cut if huge. */
export function fieldName(path: string): string {
  const parts = path.split('/').slice(1).map(unescapePointer)
  const name = parts.map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`)).join('')
  return cutToCharacters(name, MAX_ECHOED)
}
