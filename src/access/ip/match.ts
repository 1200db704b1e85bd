import { parseIp } from './address.ts'
import { parseIpEntry, type IpRange } from './entry.ts'

/** A key's compiled allowed addresses; built once per key load, asked once per request. */
export interface IpMatcher {
  allows(address: string): boolean
}

/**
 * Compiles stored (canonical) entries. An empty list allows any address, so it compiles
 * to null and a key without a list pays nothing on the request path. IPv4 ranges compare
 * as 32-bit numbers; IPv6 ranges as the address shifted down to its prefix.
 */
export function compileIpMatcher(entries: readonly string[]): IpMatcher | null {
  if (entries.length === 0) return null
  const v4: { network: number; mask: number }[] = []
  const v6: { network: bigint; shift: bigint }[] = []
  for (const text of entries) {
    const parsed = parseIpEntry(text)
    // Stored entries were validated when they were set; one that no longer parses allows nothing.
    if (!parsed.ok) continue
    const range: IpRange = parsed.range
    if (range.family === 4) {
      const mask = range.prefix === 0 ? 0 : (0xffffffff << (32 - range.prefix)) >>> 0
      v4.push({ network: Number(range.network), mask })
    } else {
      const shift = BigInt(128 - range.prefix)
      v6.push({ network: range.network >> shift, shift })
    }
  }
  const decide = (address: string): boolean => {
    const ip = parseIp(address)
    if (ip === null) return false
    if (ip.family === 4) {
      const value = Number(ip.value)
      return v4.some((r) => (value & r.mask) >>> 0 === r.network)
    }
    return v6.some((r) => ip.value >> r.shift === r.network)
  }
  // A server key is called from a few addresses: each one's answer is kept, so a request
  // pays one Map.get whatever the list's length (bench/README.md, "Allowed IPs").
  const decided = new Map<string, boolean>()
  return {
    allows(address) {
      let allowed = decided.get(address)
      if (allowed === undefined) {
        if (decided.size >= MAX_DECIDED) decided.clear()
        allowed = decide(address)
        decided.set(address, allowed)
      }
      return allowed
    },
  }
}

/** Addresses whose answer a key's matcher keeps; past this many it starts over. */
const MAX_DECIDED = 256
