import { bitsOf, formatIp, networkMask, parseIp, type IpFamily } from './address.ts'

/** One allowed-address entry: an address is a range of one (`/32`, `/128`). */
export interface IpRange {
  family: IpFamily
  network: bigint
  prefix: number
}

export type ParseIpEntryResult = { ok: true; entry: string; range: IpRange } | { ok: false; reason: string }

/**
 * Parses one `allowedIps` entry as a person typed it: trimmed, any case. The canonical
 * text is lower case, compressed IPv6, a single address without `/32` or `/128`; an
 * IPv4-mapped IPv6 entry becomes its IPv4 form. A range with host bits set is refused,
 * with the range that was probably meant: silently zeroing them would widen or move it.
 */
export function parseIpEntry(input: string): ParseIpEntryResult {
  const text = input.trim()
  const slash = text.indexOf('/')
  const addressText = slash < 0 ? text : text.slice(0, slash)
  const prefixText = slash < 0 ? null : text.slice(slash + 1)
  const address = parseIp(addressText)
  if (address === null || text.includes('%')) {
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
    if (prefix < 96) {
      return { ok: false, reason: `"${input}": an IPv4-mapped range must be /96 or longer; write it as an IPv4 range.` }
    }
    prefix -= 96
  }
  const mask = networkMask(address.family, prefix)
  const network = address.value & mask
  const family = address.family
  const canonicalRange = (net: bigint) =>
    prefix === bitsOf(family) ? formatIp({ family, value: net }) : `${formatIp({ family, value: net })}/${prefix}`
  if (network !== address.value) {
    return {
      ok: false,
      reason: `"${input}" has host bits set: did you mean ${canonicalRange(network)}? (Or give the single address without a prefix.)`,
    }
  }
  return { ok: true, entry: canonicalRange(network), range: { family, network, prefix } }
}

export type ParseIpEntriesResult = { ok: true; entries: string[] } | { ok: false; errors: { index: number; reason: string }[] }

export const MAX_ALLOWED_IPS = 100

/** A key's whole list: every entry canonical, duplicates (after canonicalising) kept once. */
export function parseIpEntries(inputs: readonly string[]): ParseIpEntriesResult {
  const errors: { index: number; reason: string }[] = []
  const entries: string[] = []
  inputs.forEach((input, index) => {
    const parsed = parseIpEntry(input)
    if (!parsed.ok) errors.push({ index, reason: parsed.reason })
    else if (!entries.includes(parsed.entry)) entries.push(parsed.entry)
  })
  if (inputs.length > MAX_ALLOWED_IPS) {
    errors.push({ index: MAX_ALLOWED_IPS, reason: `at most ${MAX_ALLOWED_IPS} entries are allowed; use wider ranges.` })
  }
  return errors.length ? { ok: false, errors } : { ok: true, entries }
}
