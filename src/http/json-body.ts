import { ApiError } from '../errors.ts'
import { assertStorableText, invalidField } from '../shared/validation.ts'

/**
 * JSON request bodies, read before any route sees them (the API's key chain and the admin
 * API call this from their `parse` hooks). Three refusals, all 400 `invalid_request`:
 * nesting deeper than MAX_JSON_DEPTH (found by a scan of the text before JSON.parse, so no
 * parser or later walk can run out of stack), text that is not JSON, strings PostgreSQL
 * cannot store (U+0000, lone surrogates) and numbers out of range (`1e400`, which
 * JSON.parse turns into Infinity and jsonb into null), named by their field.
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
    value = JSON.parse(text)
  } catch {
    throw new ApiError('invalid_request', 'The body is not valid JSON. Send a JSON document with "Content-Type: application/json".')
  }
  // Without a backslash every string and name in the value is a verbatim piece of the text,
  // so a text that holds no U+0000, no lone surrogate and no "__proto__" needs no walk
  // (native scans of the text instead of a walk over every string and name).
  if (needsWalk(text)) assertStorableText(value, '')
  // Only an exponent or a run of 309 digits can exceed 1.8e308: other texts need no walk
  // (hex ids match too, so the walk builds paths only once it knows something failed).
  if (MAYBE_HUGE.test(text) && !allFinite(value)) assertFinite(value, '')
  if (text.includes('"toString"') || text.includes('"valueOf"')) convertible(value)
  return value
}

const MAYBE_HUGE = /[0-9][eE]|[0-9]{309}/

const OUT_OF_RANGE = 'is a number out of range (beyond ±1.8e308, it would be Infinity); send a finite number'

function allFinite(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value)
  if (typeof value !== 'object' || value === null) return true
  if (Array.isArray(value)) return value.every(allFinite)
  for (const key in value) if (!allFinite((value as Record<string, unknown>)[key])) return false
  return true
}

/** Throws naming the first number JSON.parse made Infinity (`events[2].properties.big`). */
function assertFinite(value: unknown, path: string): void {
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return
    if (path === '') throw new ApiError('invalid_request', `Invalid body: it ${OUT_OF_RANGE}.`)
    throw invalidField(path.slice(0, 200), OUT_OF_RANGE)
  }
  if (typeof value !== 'object' || value === null) return
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) assertFinite(value[i], `${path}[${i}]`)
    return
  }
  for (const key in value) assertFinite((value as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`)
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
