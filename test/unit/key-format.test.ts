import { afterEach, describe, expect, spyOn, test } from 'bun:test'
import { crc32 } from 'node:zlib'
import fc from 'fast-check'
import {
  type BearerResult,
  CHECKSUMMED_KEY_PATTERN,
  checksumHolds,
  generateKey,
  hashKey,
  isKeyShaped,
  keyChecksum,
  keyHint,
  readBearer,
} from '../../src/access/key-format.ts'

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

/** A checksummed key of `random` (30 characters) after `prefix`. */
const checksummed = (prefix: string, random: string) => prefix + random + keyChecksum(prefix + random)

describe('generating a key', () => {
  afterEach(() => {
    // spyOn's restore: the next test draws from the CSPRNG again.
    for (const spy of spies.splice(0)) spy.mockRestore()
  })
  const spies: { mockRestore(): void }[] = []

  /** Makes crypto.getRandomValues fill each buffer from `bytes`, in order (then zeros). */
  function randomBytes(bytes: number[]): void {
    const queue = [...bytes]
    spies.push(
      spyOn(crypto, 'getRandomValues').mockImplementation(<T extends ArrayBufferView | null>(array: T): T => {
        const view = array as unknown as Uint8Array
        for (let i = 0; i < view.length; i++) view[i] = queue.shift() ?? 0
        return array
      }),
    )
  }

  test('each random byte below 248 gives the character at its value modulo 62; bytes 248-255 are skipped, so no character is likelier', () => {
    // 248 = 4 x 62: bytes 0-247 cover each of the 62 characters four times.
    const bytes = [248, 255, 0, 61, 62, 247, 25, 26, 51, 52, 123]
    randomBytes(bytes)
    const key = generateKey('private')
    const random = `A9A9Zaz09${'A'.repeat(21)}`
    expect(key).toBe(checksummed('sk_', random))
  })

  test('a random draw with too many bytes past 247 draws again until it has 30 characters', () => {
    // A first buffer of 48 bytes all skipped, then 10 characters in the second, zeros after.
    randomBytes([...Array(48).fill(250), ...Array(10).fill(1)])
    const key = generateKey('public')
    expect(key).toBe(checksummed('pk_', 'B'.repeat(10) + 'A'.repeat(20)))
  })
})

describe('reading the Authorization header', () => {
  const key = checksummed('sk_', 'Q'.repeat(30))
  const notBearer: BearerResult = {
    ok: false,
    code: 'malformed_api_key',
    message: 'The Authorization header is not of the form "Bearer <key>". Send "Authorization: Bearer pk_..." or "Bearer sk_...".',
  }
  const badKey: BearerResult = {
    ok: false,
    code: 'malformed_api_key',
    message:
      'The API key is malformed: a key is "pk_" or "sk_" followed by 20 to 40 letters and digits, with nothing around it. Copy the key again from the dashboard.',
  }

  test('no header: missing_api_key, saying how to send one', () => {
    expect(readBearer(null)).toStrictEqual({
      ok: false,
      code: 'missing_api_key',
      message: 'No API key was sent. Send it as the header "Authorization: Bearer <key>".',
    })
  })

  test('the scheme in any case, then one or more spaces, then the key', () => {
    for (const header of [`Bearer ${key}`, `bearer ${key}`, `BEARER ${key}`, `bEaReR ${key}`, `Bearer    ${key}`]) {
      expect(readBearer(header)).toStrictEqual({ ok: true, key })
    }
  })

  test('another scheme, no space, a tab, or no key after the scheme: not of the form', () => {
    for (const header of [`Digest ${key}`, `Basic ${key}`, `Bearer\t${key}`, `Bearer${key}`, 'Bearer', 'Bearer ', '', key]) {
      expect(readBearer(header)).toStrictEqual(notBearer)
    }
  })

  test('the scheme then anything but one key of the alphabet: a malformed key', () => {
    for (const header of [
      'Bearer x',
      `Bearer ${key} `,
      `Bearer "${key}"`,
      `Bearer ${key}, Bearer ${key}`,
      `Bearer ${key.replace('sk_', 'xk_')}`,
      `Bearer ${key.replace('sk_', 'SK_')}`,
      `Bearer ${key.slice(0, -1)}-`,
      `Bearer x${key}`,
    ]) {
      expect(readBearer(header)).toStrictEqual(badKey)
    }
  })

  test('20 to 40 characters after the prefix are read; 19 and 41 are malformed', () => {
    for (const length of [20, 21, 35, 37, 39, 40]) {
      const legacy = `pk_${'z'.repeat(length)}`
      expect(readBearer(`Bearer ${legacy}`)).toStrictEqual({ ok: true, key: legacy })
      expect(isKeyShaped(legacy)).toBe(true)
    }
    for (const length of [0, 19, 41, 60]) {
      const wrong = `pk_${'z'.repeat(length)}`
      expect(readBearer(`Bearer ${wrong}`)).toStrictEqual(badKey)
      expect(isKeyShaped(wrong)).toBe(false)
    }
  })

  test('a checksummed key with a wrong checksum: malformed, saying so, and marked to count toward the failure budget', () => {
    const wrong = `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`
    expect(readBearer(`Bearer ${wrong}`)).toStrictEqual({
      ok: false,
      code: 'malformed_api_key',
      message:
        "The API key's checksum (its last 6 characters) does not match the rest: a character was lost or changed on the way. Copy the key again from the dashboard.",
      checksumFailed: true,
    })
  })
})

describe('a key in other text', () => {
  test('isKeyShaped: true for a checksummed key and a key of the older form, false for a wrong checksum or another shape', () => {
    const key = checksummed('pk_', 'k'.repeat(30))
    expect(isKeyShaped(key)).toBe(true)
    expect(isKeyShaped(`sk_${'k'.repeat(32)}`)).toBe(true)
    expect(isKeyShaped(`${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`)).toBe(false)
    expect(isKeyShaped(` ${key}`)).toBe(false)
    expect(isKeyShaped(`${key}.`)).toBe(false)
    expect(isKeyShaped(`tk_${'k'.repeat(36)}`)).toBe(false)
  })

  test('the published pattern finds a key between other characters, and no run of 35 or 37 key characters', () => {
    const key = checksummed('sk_', 'r'.repeat(30))
    expect(`a=${key};b="${key}"`.match(CHECKSUMMED_KEY_PATTERN)).toEqual([key, key])
    expect(`${key}x`.match(CHECKSUMMED_KEY_PATTERN)).toBeNull()
    expect(`x${key}`.match(CHECKSUMMED_KEY_PATTERN)).toBeNull()
    expect(key.slice(0, -1).match(CHECKSUMMED_KEY_PATTERN)).toBeNull()
    expect(`pk-${key.slice(3)}`.match(CHECKSUMMED_KEY_PATTERN)).toBeNull()
  })

  test('a key is stored as the hex SHA-256 of the whole key, and listed as its prefix and last four characters', () => {
    const key = checksummed('sk_', 'h'.repeat(30))
    expect(hashKey(key)).toBe(new Bun.CryptoHasher('sha256').update(key).digest('hex'))
    expect(hashKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(keyHint(key)).toBe(`sk_…${key.slice(-4)}`)
    expect(keyHint('pk_abcdefghijklmnopqrstuvwxyz')).toBe('pk_…wxyz')
  })
})
