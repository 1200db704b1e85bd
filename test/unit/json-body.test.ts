import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { ApiError } from '../../src/errors.ts'
import { parseJsonBody } from '../../src/http/json-body.ts'

// parseJsonBody skips its walk over every string when the text itself shows none can be
// unstorable (no backslash, no U+0000, no lone surrogate, no "__proto__"). The property:
// it refuses exactly the bodies whose strings or names PostgreSQL cannot store, whether
// they arrive raw or escaped.

const unstorable = (s: string) => s.includes('\u0000') || !s.isWellFormed()
const refused = (text: string) => {
  try {
    parseJsonBody(text)
    return false
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError)
    return true
  }
}
// Any UTF-16 unit but the ones JSON forbids raw inside a string (quote, backslash, controls), plus U+0000.
const rawText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 20 }).map((s) =>
  s
    .split('')
    .filter((c) => c === '\u0000' || (c >= ' ' && c !== '"' && c !== '\\'))
    .join(''),
)

describe('parseJsonBody', () => {
  test('refuses a raw string value or name exactly when it cannot be stored', () => {
    fc.assert(
      fc.property(rawText, rawText, (value, name) => {
        const text = `{"event":{"${name}":"${value}"}}`
        expect(refused(text)).toBe(unstorable(value) || unstorable(name) || name === '__proto__')
      }),
      { numRuns: 2000 },
    )
  })

  test('refuses the same strings when they arrive as escapes', () => {
    fc.assert(
      fc.property(rawText, (value) => {
        const escaped = value
          .split('')
          .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
          .join('')
        expect(refused(`{"url":"${escaped}"}`)).toBe(unstorable(value))
      }),
      { numRuns: 2000 },
    )
  })

  test('takes a page view as sent', () => {
    expect(parseJsonBody('{"eventType":"page_view","url":"https://example.com/ü"}')).toEqual({
      eventType: 'page_view',
      url: 'https://example.com/ü',
    })
  })
})

describe('numbers out of range', () => {
  // JSON.parse reads 1e400 as Infinity, which jsonb would store as null.
  test.each([
    ['1e400', ''],
    ['{"a": -1e400}', 'a'],
    ['{"events": [{"properties": {"big": 1E+400}}]}', 'events[0].properties.big'],
    ['{"x": [1, 2, ' + '9'.repeat(400) + ']}', 'x[2]'],
  ])('%s is refused naming %p', (text, field) => {
    let message = ''
    try {
      parseJsonBody(text)
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError)
      message = (error as ApiError).message
    }
    expect(message).toContain('out of range')
    if (field) expect(message).toContain(`"${field}"`)
  })

  test.each([
    ['9007199254740992', ''],
    ['{"a": {"id": 9007199254740993}}', 'a.id'],
    ['{"events": [{"properties": {"n": -123456789012345678901}}]}', 'events[0].properties.n'],
  ])('the integer in %s, beyond what a double holds exactly, is refused naming %p', (text, field) => {
    let message = ''
    try {
      parseJsonBody(text)
    } catch (error) {
      message = (error as ApiError).message
    }
    expect(message).toContain('send it as a string')
    if (field) expect(message).toContain(`"${field}"`)
  })

  test('numbers written with an exponent are numbers by choice, and pass', () => {
    expect(parseJsonBody('{"n": 1e16, "m": 2.5E20}')).toEqual({ n: 1e16, m: 2.5e20 })
  })

  test('safe integers, fractions and long digit strings pass exactly as sent', () => {
    const text = '{"max": 9007199254740991, "min": -9007199254740991, "f": 12345678901234.5, "s": "90071992547409931234", "x": 0.1}'
    expect(parseJsonBody(text)).toEqual({
      max: 9007199254740991,
      min: -9007199254740991,
      f: 12345678901234.5,
      s: '90071992547409931234',
      x: 0.1,
    })
  })

  test('large finite numbers and hex-looking ids pass', () => {
    expect(parseJsonBody('{"a": 1e308, "b": -1.7e308, "c": "3e7a", "d": 5e-400}')).toEqual({ a: 1e308, b: -1.7e308, c: '3e7a', d: 0 })
  })
})
