import { describe, expect, test } from 'bun:test'
import { crc32 } from 'node:zlib'
import fc from 'fast-check'
import { CHECKSUMMED_KEY_PATTERN, checksumHolds, generateKey, keyChecksum, readBearer } from '../../src/access/key-format.ts'

// The checksum as docs/api.md ("When a key leaks") defines it, written apart from the
// service's code: zlib's CRC-32, then base 62 through BigInt.
const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
function referenceChecksum(text: string): string {
  let value = BigInt(crc32(Buffer.from(text, 'ascii')))
  let out = ''
  while (value > 0n) {
    out = DIGITS[Number(value % 62n)] + out
    value /= 62n
  }
  return out.padStart(6, '0')
}

const alphanumeric = fc.constantFrom(...DIGITS.split(''))
const randomPart = fc.array(alphanumeric, { minLength: 30, maxLength: 30 }).map((chars) => chars.join(''))
const prefix = fc.constantFrom('pk_', 'sk_')

describe('checksummed keys', () => {
  test('a generated key is the prefix, 30 random characters and their checksum, matched by the published pattern', () => {
    for (const type of ['public', 'private'] as const) {
      for (let i = 0; i < 200; i++) {
        const key = generateKey(type)
        expect(key).toMatch(type === 'public' ? /^pk_[A-Za-z0-9]{36}$/ : /^sk_[A-Za-z0-9]{36}$/)
        expect(key.slice(-6)).toBe(referenceChecksum(key.slice(0, -6)))
        expect(`token: ${key}.`.match(CHECKSUMMED_KEY_PATTERN)).toEqual([key])
      }
    }
  })

  test('the checksum is zlib CRC-32 in base 62, left-padded: for any prefix and random part', () => {
    fc.assert(
      fc.property(prefix, randomPart, (p, random) => {
        expect(keyChecksum(p + random)).toBe(referenceChecksum(p + random))
      }),
      { numRuns: 2000 },
    )
  })

  test('known values: CRC-32 of the empty text (0, all padding) and the standard check value', () => {
    expect(keyChecksum('')).toBe('000000')
    // CRC-32 of "123456789" is 0xCBF43926 (3421780262), in base 62: 3 45 35 27 22 14.
    expect(crc32('123456789')).toBe(0xcbf43926)
    expect(keyChecksum('123456789')).toBe('3jZRME')
  })

  test('any one character changed, anywhere in a checksummed key, fails the checksum', () => {
    fc.assert(
      fc.property(prefix, randomPart, fc.nat(35), alphanumeric, (p, random, at, replacement) => {
        const key = p + random + keyChecksum(p + random)
        expect(checksumHolds(key)).toBe(true)
        const body = key.slice(3)
        fc.pre(body[at] !== replacement)
        const changed = p + body.slice(0, at) + replacement + body.slice(at + 1)
        expect(checksumHolds(changed)).toBe(false)
        const read = readBearer(`Bearer ${changed}`)
        expect(read).toMatchObject({ ok: false, code: 'malformed_api_key', checksumFailed: true })
      }),
      { numRuns: 2000 },
    )
  })

  test('keys of any other length carry no checksum and read as before', () => {
    fc.assert(
      fc.property(prefix, fc.array(alphanumeric, { minLength: 20, maxLength: 40 }), (p, chars) => {
        fc.pre(chars.length !== 36)
        const key = p + chars.join('')
        expect(checksumHolds(key)).toBe(true)
        expect(readBearer(`Bearer ${key}`)).toEqual({ ok: true, key })
      }),
    )
  })

  test("the pattern the README and docs/api.md publish finds generated keys and is the service's own", async () => {
    for (const document of ['README.md', 'docs/api.md']) {
      const text = await Bun.file(new URL(`../../${document}`, import.meta.url)).text()
      const published = /```\n(\\b\(\?:pk\|sk\)_\[A-Za-z0-9\]\{36\}\\b)\n```/.exec(text)?.[1]
      expect(published).toBe(CHECKSUMMED_KEY_PATTERN.source)
      const pattern = new RegExp(published!, 'g')
      const key = generateKey('private')
      expect(`SECRET=${key}\n`.match(pattern)).toEqual([key])
    }
  })

  test('two keys with the same random part and another prefix have their own checksums', () => {
    const random = 'A'.repeat(30)
    expect(keyChecksum(`pk_${random}`)).not.toBe(keyChecksum(`sk_${random}`))
    expect(checksumHolds(`sk_${random}${keyChecksum(`pk_${random}`)}`)).toBe(false)
  })
})
