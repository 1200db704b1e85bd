import { describe, expect, test } from 'bun:test'
import { hashToken, randomToken, sameSecret } from '../../src/access/secrets.ts'

describe('sameSecret', () => {
  test.each([
    ['the same secret', 'keygate-admin-token-0123', 'keygate-admin-token-0123', true],
    ['one character off', 'keygate-admin-token-0124', 'keygate-admin-token-0123', false],
    ['a prefix of the secret', 'keygate-admin', 'keygate-admin-token-0123', false],
    ['a longer value', 'keygate-admin-token-01234', 'keygate-admin-token-0123', false],
    ['an empty value', '', 'keygate-admin-token-0123', false],
    ['a different case', 'KEYGATE-ADMIN-TOKEN-0123', 'keygate-admin-token-0123', false],
  ])('%s', (_, given, expected, same) => {
    expect(sameSecret(given, expected)).toBe(same)
  })
})

describe('tokens for cookies and links', () => {
  test('randomToken: 256 random bits as 43 base64url characters, a new one each time', () => {
    const tokens = Array.from({ length: 50 }, randomToken)
    for (const token of tokens) {
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(Buffer.from(token, 'base64url')).toHaveLength(32)
    }
    expect(new Set(tokens).size).toBe(tokens.length)
  })

  test("hashToken: the token's SHA-256 in hex, what is stored in its place", () => {
    // The FIPS 180-2 test vector for "abc".
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(hashToken('abd')).not.toBe(hashToken('abc'))
  })
})
