import { describe, expect, test } from 'bun:test'
import { sameSecret } from '../../src/access/secrets.ts'

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
