import { FormatRegistry } from '@sinclair/typebox'
import { t } from 'elysia'

/**
 * Limits on characters count code points: an emoji is one character, as JSON Schema's
 * `maxLength` means it. TypeBox's `minLength`/`maxLength` count UTF-16 units instead (101
 * emoji were refused as 202 characters), so a field limited in characters is a string
 * whose limit is checked by a format that counts code points (docs/decisions.md, "Strict
 * bodies and validation messages").
 */

/** The number of code points of `text`: a surrogate pair is one, a lone surrogate one too. */
export function codePointLength(text: string): number {
  let count = text.length
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--
        i++
      }
    }
  }
  return count
}

/** Whether `text` has from `min` to `max` code points; counted only when its length in units leaves a doubt. */
export function hasCodePointsWithin(text: string, min: number, max: number): boolean {
  // A code point is one or two units: n units hold from ceil(n / 2) to n code points.
  if (text.length <= max && Math.ceil(text.length / 2) >= min) return true
  if (text.length < min || text.length > 2 * max) return false
  const count = codePointLength(text)
  return count >= min && count <= max
}

/** The TypeBox format that holds a string to `min`-`max` code points, registered once per pair. */
function codePointFormat(min: number, max: number): string {
  const name = `code-points-${min}-${max}`
  if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, (value) => hasCodePointsWithin(value, min, max))
  return name
}

export interface CharsOptions {
  minLength?: number
  maxLength: number
  /** What the field takes, for the 400's message ("must be ..."); by default worded from the limits. */
  error?: string
  description?: string
  /** A pattern the text must match too (checked by TypeBox as ever). */
  pattern?: string
}

/**
 * A string of `minLength` to `maxLength` characters (code points). The schema TypeBox
 * checks holds the format, and unit bounds that every such string meets (a huge string is
 * refused before it is counted); the API reference shows the limits in characters.
 */
export function Chars(options: CharsOptions) {
  const { minLength = 0, maxLength, error, description, pattern } = options
  const shown = { type: 'string', ...(minLength > 0 ? { minLength } : {}), maxLength, ...(pattern === undefined ? {} : { pattern }) }
  return t.String({
    minLength,
    maxLength: 2 * maxLength,
    format: codePointFormat(minLength, maxLength),
    ...(pattern === undefined ? {} : { pattern }),
    ...(error === undefined ? {} : { error }),
    ...(description === undefined ? {} : { description }),
    // What the reference shows (src/http/openapi-document.ts): the limits in characters.
    documentAs: shown,
  })
}

/** `text` cut to its first `max` characters (never inside a surrogate pair), with "…" when cut. */
export function cutToCharacters(text: string, max: number): string {
  if (text.length <= max) return text
  let end = 0
  for (let n = 0; n < max && end < text.length; n++) {
    const unit = text.charCodeAt(end)
    const next = text.charCodeAt(end + 1)
    end += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1
  }
  return end >= text.length ? text : `${text.slice(0, end)}…`
}
