import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { formatIp, networkOf, parseIp } from '../../src/shared/ip.ts'
import { compileIpMatcher, parseIpEntry } from '../../src/access/allowed-ips.ts'

// The matcher against a plain reference (compare the first `prefix`
// bits of two bit strings), and canonical entries that parse back to themselves.

const v4 = fc.integer({ min: 0, max: 0xffffffff }).map((n) => BigInt(n))
const v6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n })

function bitString(value: bigint, bits: number): string {
  return value.toString(2).padStart(bits, '0')
}

/** Reference: a range holds an address when their first `prefix` bits are the same. */
function referenceMatch(range: { family: 4 | 6; network: bigint; prefix: number }, address: { family: 4 | 6; value: bigint }) {
  if (range.family !== address.family) return false
  const bits = range.family === 4 ? 32 : 128
  return bitString(range.network, bits).slice(0, range.prefix) === bitString(address.value, bits).slice(0, range.prefix)
}

/** A range (host bits zeroed by the reference itself) as text. */
const range = fc.oneof(
  fc.tuple(v4, fc.integer({ min: 0, max: 32 })).map(([value, prefix]) => ({ family: 4 as const, value, prefix })),
  fc.tuple(v6, fc.integer({ min: 0, max: 128 })).map(([value, prefix]) => ({ family: 6 as const, value, prefix })),
)

function zeroHostBits(family: 4 | 6, value: bigint, prefix: number): bigint {
  const bits = family === 4 ? 32 : 128
  const network = bitString(value, bits).slice(0, prefix).padEnd(bits, '0')
  return BigInt(`0b${network}`)
}

/** Related addresses: near a range's network, so matches are not vanishingly rare. */
const case_ = range.chain((r) =>
  fc.tuple(
    fc.constant(r),
    r.family === 4
      ? fc.oneof(
          v4,
          fc.integer({ min: 0, max: 255 }).map((n) => zeroHostBits(4, r.value, r.prefix) | BigInt(n)),
        )
      : fc.oneof(
          v6,
          v6.map((n) => zeroHostBits(6, r.value, r.prefix) | (n & 0xffffn)),
        ),
    fc.boolean(),
  ),
)

describe('the IP matcher', () => {
  test('agrees with a prefix compare over random v4 and v6 ranges and addresses', () => {
    fc.assert(
      fc.property(case_, ([r, value, asMapped]) => {
        const network = zeroHostBits(r.family, r.value, r.prefix)
        const entry = `${formatIp({ family: r.family, value: network })}/${r.prefix}`
        const matcher = compileIpMatcher([entry])!
        const address = { family: r.family, value }
        // IPv4 clients may arrive IPv4-mapped (::ffff:a.b.c.d); they match IPv4 entries alike.
        const text = r.family === 4 && asMapped ? `::ffff:${formatIp(address)}` : formatIp(address)
        expect(matcher.allows(text)).toBe(referenceMatch({ family: r.family, network, prefix: r.prefix }, address))
      }),
      { numRuns: 2000 },
    )
  })

  test('an IPv4 entry never matches an IPv6 address outside ::ffff:0:0/96, nor the reverse', () => {
    expect(compileIpMatcher(['0.0.0.0/0'])!.allows('2001:db8::1')).toBe(false)
    expect(compileIpMatcher(['::/0'])!.allows('203.0.113.7')).toBe(false)
    expect(compileIpMatcher(['203.0.113.7'])!.allows('::ffff:203.0.113.7')).toBe(true)
    expect(compileIpMatcher(['203.0.113.7'])!.allows('::ffff:cb00:7107')).toBe(true)
    expect(compileIpMatcher(['203.0.113.7'])!.allows('unknown')).toBe(false)
  })

  test('one matcher asked about many addresses, each several times, answers each as a fresh one would', () => {
    const entries = ['198.51.100.0/24', '2001:db8::/48', '203.0.113.7']
    const matcher = compileIpMatcher(entries)!
    const addresses = Array.from({ length: 700 }, (_, i) =>
      i % 2 ? `198.51.${100 + (i % 3)}.${i % 256}` : `2001:db8:${i % 3}::${i.toString(16)}`,
    )
    // Past the matcher's memory of answers (256 addresses) and back: the answers stay the same.
    for (let round = 0; round < 3; round++) {
      for (const address of addresses) expect(matcher.allows(address)).toBe(compileIpMatcher(entries)!.allows(address))
    }
    expect(matcher.allows('198.51.100.9')).toBe(true)
    expect(matcher.allows('198.51.101.9')).toBe(false)
  })

  test('an empty list compiles to nothing: any address is allowed at no cost', () => {
    expect(compileIpMatcher([])).toBeNull()
  })
})

describe('canonical entries', () => {
  test('a canonical entry parses back to itself, and a host address needs no prefix', () => {
    fc.assert(
      fc.property(range, (r) => {
        const network = zeroHostBits(r.family, r.value, r.prefix)
        const text = formatIp({ family: r.family, value: network })
        const parsed = parseIpEntry(`${text}/${r.prefix}`)
        if (!parsed.ok) throw new Error(parsed.reason)
        const full = r.prefix === (r.family === 4 ? 32 : 128)
        expect(parsed.entry).toBe(full ? text : `${text}/${r.prefix}`)
        const again = parseIpEntry(parsed.entry)
        expect(again.ok && again.entry).toBe(parsed.entry)
      }),
      { numRuns: 2000 },
    )
  })

  test('any spelling of an IPv6 address canonicalises to its RFC 5952 form', () => {
    fc.assert(
      fc.property(v6, fc.boolean(), (value, upper) => {
        const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0'))
        const long = groups.join(':')
        const parsed = parseIp(upper ? long.toUpperCase() : long)
        expect(parsed).not.toBeNull()
        // IPv4-mapped values become IPv4: the matcher compares them as such.
        if (parsed!.family === 6) {
          expect(parsed!.value).toBe(value)
          expect(formatIp(parsed!)).toBe(formatIp({ family: 6, value }))
          expect(parseIp(formatIp(parsed!))!.value).toBe(value)
        }
      }),
      { numRuns: 2000 },
    )
  })

  test.each([
    ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8::0:1', '2001:db8::1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
    ['198.51.100.0/24', '198.51.100.0/24'],
    ['0.0.0.0/0', '0.0.0.0/0'],
  ])('%s is stored as %s', (input, stored) => {
    const parsed = parseIpEntry(input)
    expect(parsed.ok && parsed.entry).toBe(stored)
  })

  test('host bits set: refused with the range meant', () => {
    const parsed = parseIpEntry('198.51.100.7/24')
    expect(parsed.ok).toBe(false)
    expect(!parsed.ok && parsed.reason).toContain('198.51.100.0/24')
  })
})

describe('networkOf', () => {
  test('an IPv4 address is offered its /24, an IPv6 address its /64', () => {
    expect(networkOf('198.51.100.77')).toBe('198.51.100.0/24')
    expect(networkOf('::ffff:198.51.100.77')).toBe('198.51.100.0/24')
    expect(networkOf('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64')
    expect(networkOf('unknown')).toBeNull()
  })
})
