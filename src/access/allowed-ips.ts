import { parseRange, rangesMatcher, type IpRange } from '../shared/ip.ts'

/**
 * Private keys' allowed client addresses: the list rules and the
 * per-key matcher, over the one IP module (src/shared/ip.ts).
 */

export const MAX_ALLOWED_IPS = 100

export type ParseIpEntryResult = { ok: true; entry: string; range: IpRange } | { ok: false; reason: string }

/** One entry as a person typed it, with its canonical text (lower case, compressed IPv6, no `/32` or `/128`). */
export function parseIpEntry(input: string): ParseIpEntryResult {
  const parsed = parseRange(input)
  return parsed.ok ? { ok: true, entry: parsed.text, range: parsed.range } : parsed
}

export type ParseIpEntriesResult = { ok: true; entries: string[] } | { ok: false; errors: { index: number; reason: string }[] }

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

/** A key's compiled allowed addresses, built once per key load. */
export interface IpMatcher {
  allows(address: string): boolean
}

/**
 * Compiles stored (canonical) entries. An empty list allows any address, so it compiles to
 * null and a key without a list pays nothing on the request path. A stored entry that no
 * longer parses allows nothing.
 */
export function compileIpMatcher(entries: readonly string[]): IpMatcher | null {
  if (entries.length === 0) return null
  const ranges: IpRange[] = []
  for (const entry of entries) {
    const parsed = parseRange(entry)
    if (parsed.ok) ranges.push(parsed.range)
  }
  return { allows: rangesMatcher(ranges) }
}
