/**
 * IP addresses and CIDR ranges as numbers (contract section 14). Pure: no node:net, so
 * the parsing rules are ours and the same on every runtime, and the matcher compares
 * integers instead of strings.
 */

export type IpFamily = 4 | 6

export interface IpAddress {
  family: IpFamily
  /** The address as an unsigned integer: 32 bits for IPv4, 128 for IPv6. */
  value: bigint
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

/** IPv6 text (lower or upper case, `::` once, an IPv4 tail allowed); no zone index. */
export function parseIpv6(text: string): bigint | null {
  const lower = text.toLowerCase()
  const halves = lower.split('::')
  if (halves.length > 2) return null
  const groupsOf = (part: string): bigint[] | null => {
    if (part === '') return []
    const out: bigint[] = []
    const pieces = part.split(':')
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece)
        if (v4 === null) return null
        out.push(v4 >> 16n, v4 & 0xffffn)
      } else if (V6_GROUP.test(piece)) out.push(BigInt(Number.parseInt(piece, 16)))
      else return null
    }
    return out
  }
  const left = groupsOf(halves[0]!)
  const right = halves.length === 2 ? groupsOf(halves[1]!) : []
  if (left === null || right === null) return null
  // An IPv4 tail is only allowed at the very end.
  if (halves.length === 2 && halves[0]!.includes('.')) return null
  const missing = 8 - left.length - right.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null
  let value = 0n
  for (const group of [...left, ...Array<bigint>(missing).fill(0n), ...right]) value = (value << 16n) | group
  return value
}

/**
 * An address as the matcher compares it: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
 * is its IPv4 address, because a dual-stack socket reports IPv4 clients that way.
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

/** RFC 5952 text: lower case, no leading zeros, the longest run of two or more zero groups as `::`. */
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
