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

  // Each entry's match is one shared, immutable value: the hot path builds nothing on success.
  const allowed = (entry: string): OriginMatch => Object.freeze({ allowed: true as const, entry })
  let anyMatch: OriginMatch | null = null
  const exact = new Map<string, OriginMatch>()
  const domains: { domain: string; match: OriginMatch }[] = []
  const addExact = (origin: string, entry: string) => {
    if (!exact.has(origin)) exact.set(origin, allowed(entry))
  }

  for (const entry of parsed) {
    switch (entry.kind) {
      case 'any':
        anyMatch ??= allowed(entry.canonical)
        break
      case 'domain':
        domains.push({ domain: entry.host, match: allowed(entry.canonical) })
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

  const denied = (origin: string | null): OriginMatch => ({ allowed: false, reason: explainDenial(origin, list, parsed, ignored) })
  return {
    entries: list,
    match(origin: string | null): OriginMatch {
      if (anyMatch !== null) return anyMatch
      if (origin === null) return denied(null)
      const exactMatch = exact.get(origin)
      if (exactMatch !== undefined) return exactMatch
      // Domain entries: `https://` + (labels + ".")? + domain, default port only. Ending
      // with the domain rules out a port, path or trailing dot; the prefix is scanned.
      if (domains.length > 0 && origin.length <= 8 + 253 && origin.startsWith('https://')) {
        // An indexed loop: no iterator on the per-request path.
        for (let index = 0; index < domains.length; index++) {
          const { domain, match } = domains[index]!
          const prefixEnd = origin.length - domain.length
          if (prefixEnd < 8 || !origin.endsWith(domain)) continue
          if (prefixEnd === 8) return match
          if (prefixEnd > 9 && origin.charCodeAt(prefixEnd - 1) === DOT && labelsValid(origin, 8, prefixEnd - 1)) return match
        }
      }
      // A refusal says why; refusals from one address are bounded by its failure budget.
      return denied(origin)
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
