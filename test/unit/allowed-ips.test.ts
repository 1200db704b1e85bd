import { expect, test } from 'bun:test'
import { compileIpMatcher, MAX_ALLOWED_IPS, parseIpEntries } from '../../src/access/allowed-ips.ts'

// A private key's allowed addresses (docs/api.md, "Allowed client addresses"): the list's bound, and the
// matcher built from what is stored.

test(`a list of ${MAX_ALLOWED_IPS} entries is accepted; one more is refused, naming the bound, nothing else kept`, () => {
  const entries = Array.from({ length: MAX_ALLOWED_IPS + 1 }, (_, i) => `10.0.${Math.floor(i / 256)}.${i % 256}`)
  const full = parseIpEntries(entries.slice(0, MAX_ALLOWED_IPS))
  expect(full.ok && full.entries.length).toBe(MAX_ALLOWED_IPS)
  expect(parseIpEntries(entries)).toEqual({
    ok: false,
    errors: [{ index: MAX_ALLOWED_IPS, reason: `at most ${MAX_ALLOWED_IPS} entries are allowed; use wider ranges.` }],
  })
})

test('a stored entry that no longer parses allows nothing; the others still match', () => {
  const matcher = compileIpMatcher(['not-an-address', '10.0.0.0/8'])!
  expect(matcher.allows('10.1.2.3')).toBe(true)
  expect(matcher.allows('192.0.2.1')).toBe(false)
  expect(compileIpMatcher(['not-an-address'])!.allows('192.0.2.1')).toBe(false)
  expect(compileIpMatcher([])).toBeNull()
})
