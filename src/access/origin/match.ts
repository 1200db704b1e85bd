import { DEFAULT_PORT, parseEntry, type Entry, type Scheme } from './entry.ts'
import { explainDenial } from './explain.ts'

/**
 * The request side: a key's entries compiled once, matched on every request against the
 * Origin header exactly as browsers serialize it (never repaired).
 */

export type OriginMatch = { allowed: true; entry: string } | { allowed: false; reason: string }

export interface OriginMatcher {
  readonly entries: readonly string[]
  match(origin: string | null): OriginMatch
}

// Per matcher; enough for the few origins a key really sees, small enough for junk input.
const MAX_MEMO = 32

const DOT = 46
const HYPHEN = 45

export function compileOriginMatcher(entries: readonly string[]): OriginMatcher {
  const list = Object.freeze([...entries])
  // Stored entries are re-parsed rather than trusted; one that no longer validates (e.g.
  // its domain became a public suffix) matches nothing, so the key fails closed.
  const parsed: Entry[] = []
  const ignored: string[] = []
  for (const entry of list) {
    const result = parseEntry(entry)
    if (result.ok) parsed.push(result.value)
    else ignored.push(entry)
  }

  let anyEntry: string | null = null
  const exact = new Map<string, string>()
  const domains: { domain: string; entry: string }[] = []
  const addExact = (origin: string, entry: string) => {
    if (!exact.has(origin)) exact.set(origin, entry)
  }

  for (const entry of parsed) {
    switch (entry.kind) {
      case 'any':
        anyEntry ??= entry.canonical
        break
      case 'domain':
        domains.push({ domain: entry.host, entry: entry.canonical })
        break
      case 'host':
        addExact(`https://${entry.host}`, entry.canonical)
        addExact(`http://${entry.host}`, entry.canonical)
        break
      case 'origin':
        addExact(entry.canonical, entry.canonical)
        break
      case 'localhost':
        // Browsers omit a default port: `localhost:443` is sent as `https://localhost`.
        addExact(serialize('http', 'localhost', entry.port), entry.canonical)
        addExact(serialize('https', 'localhost', entry.port), entry.canonical)
        break
    }
  }

  const anyMatch: OriginMatch | null = anyEntry === null ? null : { allowed: true, entry: anyEntry }
  // Results are shared, immutable objects so the hot path allocates nothing on success.
  const hits = new Map<string, OriginMatch>()
  const hit = (entry: string): OriginMatch => {
    let result = hits.get(entry)
    if (!result) hits.set(entry, (result = Object.freeze({ allowed: true as const, entry })))
    return result
  }

  const denials = new Map<string, OriginMatch>()
  let noOrigin: OriginMatch | undefined
  return {
    entries: list,
    match(origin: string | null): OriginMatch {
      if (anyMatch !== null) return anyMatch
      if (origin === null) {
        return (noOrigin ??= Object.freeze({ allowed: false as const, reason: explainDenial(null, list, parsed, ignored) }))
      }
      const exactEntry = exact.get(origin)
      if (exactEntry !== undefined) return hit(exactEntry)
      // Domain entries: `https://` + (labels + ".")? + domain, default port only. Ending
      // with the domain rules out a port, path or trailing dot; the prefix is scanned.
      if (domains.length > 0 && origin.length <= 8 + 253 && origin.startsWith('https://')) {
        // An indexed loop: no iterator on the per-request path.
        for (let index = 0; index < domains.length; index++) {
          const { domain, entry } = domains[index]!
          const prefixEnd = origin.length - domain.length
          if (prefixEnd < 8 || !origin.endsWith(domain)) continue
          if (prefixEnd === 8) return hit(entry)
          if (prefixEnd > 9 && origin.charCodeAt(prefixEnd - 1) === DOT && labelsValid(origin, 8, prefixEnd - 1)) {
            return hit(entry)
          }
        }
      }
      // Denials are memoised because a misconfigured page repeats the same origin on
      // every request, and building the explanation is the only costly part.
      let denied = denials.get(origin)
      if (denied === undefined) {
        if (denials.size >= MAX_MEMO) denials.clear()
        denied = Object.freeze({ allowed: false as const, reason: explainDenial(origin, list, parsed, ignored) })
        denials.set(origin, denied)
      }
      return denied
    },
  }
}

function serialize(scheme: Scheme, host: string, port: number | null): string {
  return port === null || port === DEFAULT_PORT[scheme] ? `${scheme}://${host}` : `${scheme}://${host}:${port}`
}

/** Dot-separated labels in text[start, end): 1-63 of [a-z0-9_-], no edge hyphen. No allocation. */
function labelsValid(text: string, start: number, end: number): boolean {
  let labelStart = start
  for (let index = start; index <= end; index++) {
    const code = index === end ? DOT : text.charCodeAt(index)
    if (code === DOT) {
      const length = index - labelStart
      if (length < 1 || length > 63) return false
      if (text.charCodeAt(labelStart) === HYPHEN || text.charCodeAt(index - 1) === HYPHEN) return false
      labelStart = index + 1
    } else if (!((code >= 97 && code <= 122) || (code >= 48 && code <= 57) || code === HYPHEN || code === 95)) {
      return false
    }
  }
  return true
}
