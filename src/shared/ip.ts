/**
 * IP addresses and CIDR ranges, the one implementation every part uses: the client address
 * and TRUST_PROXY (./client-address.ts), private keys' allowed IPs (src/access/allowed-ips.ts) and
 * IP literals in allowed origins (src/access/origin/entry.ts). Pure and strict: no
 * node:net, so the rules are ours on every runtime (no zone ids, no octal IPv4 forms).
 */

export type IpFamily = 4 | 6

export interface IpAddress {
  readonly family: IpFamily
  /** The address as an unsigned integer: 32 bits for IPv4, 128 for IPv6. */
  readonly value: bigint
}

/** A range; a single address is a range of one (`/32`, `/128`). */
export interface IpRange {
  readonly family: IpFamily
  readonly network: bigint
  readonly prefix: number
}

const V4_OCTET = /^(0|[1-9]\d{0,2})$/
const V6_GROUP = /^[0-9a-f]{1,4}$/

/** Strict dotted-quad IPv4 (no leading zeros, which some parsers read as octal). */
export function parseIpv4(text: string): bigint | null {
  const parts = text.split('.')
  if (parts.length !== 4) return null
  let value = 0n
  for (const part of parts) {
    if (!V4_OCTET.test(part)) return null
    const octet = Number(part)
    if (octet > 255) return null
    value = (value << 8n) | BigInt(octet)
  }
  return value
}

/** IPv6 text (any case, `::` once, an IPv4 tail allowed at the end); no zone id. */
export function parseIpv6(text: string): bigint | null {
  const halves = text.toLowerCase().split('::')
  if (halves.length > 2) return null
  const groupsOf = (part: string, tailAllowed: boolean): bigint[] | null => {
    if (part === '') return []
    const out: bigint[] = []
    const pieces = part.split(':')
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!
      if (tailAllowed && i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece)
        if (v4 === null) return null
        out.push(v4 >> 16n, v4 & 0xffffn)
      } else if (V6_GROUP.test(piece)) out.push(BigInt(Number.parseInt(piece, 16)))
      else return null
    }
    return out
  }
  const left = groupsOf(halves[0]!, halves.length === 1)
  const right = halves.length === 2 ? groupsOf(halves[1]!, true) : []
  if (left === null || right === null) return null
  const missing = 8 - left.length - right.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null
  let value = 0n
  for (const group of [...left, ...Array<bigint>(missing).fill(0n), ...right]) value = (value << 16n) | group
  return value
}

/**
 * An address as it is compared: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is its IPv4
 * address, because a dual-stack socket reports IPv4 clients that way. Null for anything
 * that is not an address.
 */
export function parseIp(text: string): IpAddress | null {
  if (!text.includes(':')) {
    const v4 = parseIpv4(text)
    return v4 === null ? null : { family: 4, value: v4 }
  }
  const v6 = parseIpv6(text)
  if (v6 === null) return null
  if (v6 >> 32n === 0xffffn) return { family: 4, value: v6 & 0xffffffffn }
  return { family: 6, value: v6 }
}

export function bitsOf(family: IpFamily): number {
  return family === 4 ? 32 : 128
}

/**
 * RFC 5952 text: lower case, no leading zeros, the first longest run of two or more zero
 * groups as `::`. For IPv6 this is also the WHATWG URL serialization of a host.
 */
export function formatIp(address: IpAddress): string {
  if (address.family === 4) {
    const v = address.value
    return [24n, 16n, 8n, 0n].map((shift) => ((v >> shift) & 0xffn).toString()).join('.')
  }
  const groups: number[] = []
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((address.value >> shift) & 0xffffn))
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) {
      bestStart = i
      bestLength = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`
}

/** The mask of a prefix's network bits. */
export function networkMask(family: IpFamily, prefix: number): bigint {
  const bits = BigInt(bitsOf(family))
  return ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(prefix))) - 1n)
}

/** A range as stored: a single address without its full prefix, else `network/prefix`. */
export function formatRange(range: IpRange): string {
  const text = formatIp({ family: range.family, value: range.network })
  return range.prefix === bitsOf(range.family) ? text : `${text}/${range.prefix}`
}

export type ParseRangeResult = { ok: true; range: IpRange; text: string } | { ok: false; reason: string }

/**
 * An address or CIDR range as a person typed it (trimmed, any case), with its canonical
 * text. An IPv4-mapped IPv6 entry becomes its IPv4 form. A range with host bits set is
 * refused with the range that was probably meant: silently zeroing them would widen or
 * move it.
 */
export function parseRange(input: string): ParseRangeResult {
  const text = input.trim()
  const slash = text.indexOf('/')
  const addressText = slash < 0 ? text : text.slice(0, slash)
  const prefixText = slash < 0 ? null : text.slice(slash + 1)
  const address = parseIp(addressText)
  if (address === null) {
    return {
      ok: false,
      reason: `"${input}" is not an IPv4 or IPv6 address or CIDR range; use e.g. 203.0.113.7, 198.51.100.0/24 or 2001:db8::/48.`,
    }
  }
  // A mapped IPv6 prefix counts the 96 bits before the IPv4 part.
  const mapped = address.family === 4 && addressText.includes(':')
  const max = mapped ? 128 : bitsOf(address.family)
  let prefix = max
  if (prefixText !== null) {
    if (!/^(0|[1-9]\d{0,2})$/.test(prefixText) || Number(prefixText) > max) {
      return { ok: false, reason: `"${input}": the prefix length must be a whole number from 0 to ${max}.` }
    }
    prefix = Number(prefixText)
  }
  if (mapped) {
    if (prefix < 96) return { ok: false, reason: `"${input}": an IPv4-mapped range must be /96 or longer; write it as an IPv4 range.` }
    prefix -= 96
  }
  const range: IpRange = { family: address.family, network: address.value & networkMask(address.family, prefix), prefix }
  if (range.network !== address.value) {
    return {
      ok: false,
      reason: `"${input}" has host bits set: did you mean ${formatRange(range)}? (Or give the single address without a prefix.)`,
    }
  }
  return { ok: true, range, text: formatRange(range) }
}

/** Whether an address (as text) lies in any of the ranges; what is not an address lies in none. */
export function rangesMatcher(ranges: readonly IpRange[]): (address: string) => boolean {
  const compiled = ranges.map((range) => ({ family: range.family, mask: networkMask(range.family, range.prefix), network: range.network }))
  return (text) => {
    const address = parseIp(text)
    if (address === null) return false
    return compiled.some((range) => range.family === address.family && (address.value & range.mask) === range.network)
  }
}

/**
 * The network an address most likely belongs to, as a range: its /24 for IPv4, its /64
 * for IPv6 (one site or home network). Null for what is not an address.
 */
export function networkOf(text: string, prefixes: { 4: number; 6: number } = { 4: 24, 6: 64 }): string | null {
  const address = parseIp(text)
  if (address === null) return null
  const prefix = prefixes[address.family]
  return formatRange({ family: address.family, network: address.value & networkMask(address.family, prefix), prefix })
}
