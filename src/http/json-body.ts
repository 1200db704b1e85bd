import { ApiError } from '../errors.ts'
import { assertStorableText, invalidField } from '../shared/validation.ts'

/**
 * JSON request bodies, read before any route sees them (the API's key chain and the admin
 * API call this from their `parse` hooks). Three refusals, all 400 `invalid_request`:
 * nesting deeper than MAX_JSON_DEPTH (found by a scan of the text before JSON.parse, so no
 * parser or later walk can run out of stack), text that is not JSON, strings PostgreSQL
 * cannot store (U+0000, lone surrogates), numbers out of range (`1e400`, which JSON.parse
 * turns into Infinity and jsonb into null) and integers a double cannot hold exactly
 * (beyond ±(2^53 - 1): stored, they would differ from what was sent), named by their field.
 */

/**
 * Arrays and objects inside one another, counted from the body itself (level 1). The
 * deepest legitimate body is a batch of events whose properties nest 8 levels: about 12.
 */
export const MAX_JSON_DEPTH = 32

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Whether the text nests arrays and objects deeper than `limit`, ignoring brackets inside
 * strings. It need not be valid JSON: anything invalid fails JSON.parse afterwards. A text
 * shorter than 2 * (limit + 1) characters cannot be that deep, and is not scanned.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  if (text.length < 2 * (limit + 1)) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return false
}

/** The body's value, or the 400 that says why it cannot be taken. */
export function parseJsonBody(text: string): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new ApiError(
      'invalid_request',
      `Invalid body: arrays and objects are nested more than ${MAX_JSON_DEPTH} levels deep. Flatten the document.`,
    )
  }
  let value: unknown
  try {
    // Only a run of 16 digits can be an integer past 2^53: other texts parse without the reviver.
    value = LONG_DIGITS.test(text) ? JSON.parse(text, markInexactIntegers) : JSON.parse(text)
  } catch {
    throw new ApiError('invalid_request', 'The body is not valid JSON. Send a JSON document with "Content-Type: application/json".')
  }
  // Without a backslash every string and name in the value is a verbatim piece of the text,
  // so a text that holds no U+0000, no lone surrogate and no "__proto__" needs no walk
  // (native scans of the text instead of a walk over every string and name).
  if (needsWalk(text)) assertStorableText(value, '')
  // Only an exponent or a run of 16 digits can be a number past 1.8e308 or an integer past
  // 2^53: other texts need no walk (hex ids match too, so the walk builds paths only once
  // it knows something failed).
  if (MAYBE_UNREPRESENTABLE.test(text) && !allRepresentable(value)) assertRepresentable(value, '')
  if (text.includes('"toString"') || text.includes('"valueOf"')) convertible(value)
  return value
}

const LONG_DIGITS = /[0-9]{16}/
const MAYBE_UNREPRESENTABLE = /[0-9][eE]|[0-9]{16}/

/** Stands where the text held an integer a double cannot carry exactly, for the walk to name. */
const INEXACT = Object.freeze({ inexact: true })

/**
 * JSON.parse's reviver with the source text of each value: an integer written out in digits
 * (not `1e16`, a number by choice) beyond 2^53 - 1 would be stored as its neighbour.
 */
function markInexactIntegers(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== 'number' || Number.isSafeInteger(value) || !Number.isFinite(value)) return value
  return context?.source !== undefined && /^-?[0-9]+$/.test(context.source) ? INEXACT : value
}

const OUT_OF_RANGE = 'is a number out of range (beyond ±1.8e308, it would be Infinity); send a finite number'
const INEXACT_INTEGER =
  'is an integer beyond ±9007199254740991 (2^53 - 1), which a JSON number cannot carry exactly; send it as a string, e.g. "9007199254740993"'

/** Why a value cannot be stored as sent, or null when it can. */
function numberProblem(value: unknown): string | null {
  if (value === INEXACT) return INEXACT_INTEGER
  return typeof value === 'number' && !Number.isFinite(value) ? OUT_OF_RANGE : null
}

function allRepresentable(value: unknown): boolean {
  if (typeof value === 'number' || value === INEXACT) return numberProblem(value) === null
  if (typeof value !== 'object' || value === null) return true
  if (Array.isArray(value)) return value.every(allRepresentable)
  for (const key in value) if (!allRepresentable((value as Record<string, unknown>)[key])) return false
  return true
}

/** Throws naming the first number that cannot be stored as sent (`events[2].properties.big`). */
function assertRepresentable(value: unknown, path: string): void {
  if (typeof value === 'number' || value === INEXACT) {
    const problem = numberProblem(value)
    if (problem === null) return
    if (path === '') throw new ApiError('invalid_request', `Invalid body: it ${problem}.`)
    throw invalidField(path, problem)
  }
  if (typeof value !== 'object' || value === null) return
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) assertRepresentable(value[i], `${path}[${i}]`)
    return
  }
  for (const key in value) assertRepresentable((value as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`)
}

function needsWalk(text: string): boolean {
  return text.includes('\\') || text.includes('\u0000') || text.includes('"__proto__"') || !text.isWellFormed()
}

/**
 * Elysia's validation error interpolates the value it found (`found: ${value}`): an object
 * whose own `toString` and `valueOf` are JSON strings cannot become a string, and that
 * TypeError was a 500 (`{"name": {"toString": "x"}}`). Such objects get a prototype whose
 * Symbol.toPrimitive answers instead; their own keys and their JSON stay as sent.
 */
const CONVERTIBLE = Object.create(Object.prototype, {
  [Symbol.toPrimitive]: { value: () => '[object Object]' },
}) as object

function convertible(value: unknown): void {
  if (typeof value !== 'object' || value === null) return
  if (Array.isArray(value)) {
    for (const item of value) convertible(item)
    return
  }
  if (Object.hasOwn(value, 'toString') || Object.hasOwn(value, 'valueOf')) Object.setPrototypeOf(value, CONVERTIBLE)
  for (const key in value) convertible((value as Record<string, unknown>)[key])
}
