import { DEFAULT_PORT, quoted, type Entry, type Scheme } from './entry.ts'

/**
 * Why an origin was refused, with a hint naming the entry that nearly matched. The slow
 * path: it runs only on refusals, so allocations and regexes are fine here.
 */

const SERIALIZED_ORIGIN =
  /^(https?):\/\/((?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?|\[[0-9a-f:.]+\])(?::([1-9]\d{0,4}))?$/

type SeenOrigin = { scheme: Scheme; host: string; port: number | null }

/**
 * Says why `origin` was refused, naming every entry of the key exactly once: an entry
 * that nearly matched is named in its hint, the others in the list after it, and an
 * invalid stored entry only among the ignored ones.
 */
export function explainDenial(origin: string | null, list: readonly string[], parsed: Entry[], ignored: string[]): string {
  const ignoredText = ignored.length ? ` (invalid, ignored: ${ignored.map(quoted).join(', ')})` : ''
  const valid = parsed.map((entry) => entry.canonical)
  const allowed =
    list.length === 0
      ? 'this key has no allowed origins'
      : valid.length === 0
        ? `this key has no valid allowed origins${ignoredText}`
        : `this key allows ${valid.map(quoted).join(', ')}${ignoredText}`
  if (origin === null) {
    return (
      `the request has no Origin header, and only the entry "*" matches such requests (${allowed}); ` +
      `call from a browser page on an allowed origin, or use a private key from a server`
    )
  }
  const shown = quoted(origin.length > 300 ? `${origin.slice(0, 300)}...` : origin)
  const notSerialized = originProblem(origin)
  if (notSerialized !== null) {
    return `Origin ${shown} ${notSerialized}, so it matches none of this key's entries, only "*" would (${allowed})`
  }
  const serialized = SERIALIZED_ORIGIN.exec(origin)!
  const seen: SeenOrigin = {
    scheme: serialized[1] as Scheme,
    host: serialized[2]!,
    port: serialized[3] ? Number(serialized[3]) : null,
  }
  const hints = parsed
    .map((entry) => ({ entry: entry.canonical, hint: hintFor(entry, seen, origin) }))
    .filter((found): found is { entry: string; hint: Hint } => found.hint !== null)
  if (hints.length === 0) return `Origin ${shown} is not allowed: ${allowed}. To allow it, add ${quoted(origin)}`
  const hinted = new Set(hints.map((found) => found.entry))
  const others = valid.filter((entry) => !hinted.has(entry))
  const whys = [...new Set(hints.map((found) => `entry ${quoted(found.entry)} ${found.hint.why}`))].join('; ')
  const rest = others.length ? `; the key's other entries: ${others.map(quoted).join(', ')}` : ''
  const fixes = [...new Set(hints.flatMap((found) => found.hint.fixes ?? [`add ${quoted(origin)}`]))].join(', or ')
  return `Origin ${shown} is not allowed: ${whys}${rest}${ignoredText}. To allow it, ${fixes}`
}

/**
 * How an entry nearly matched the origin (`why`, after "entry X"), and the fixes when they
 * are not "add the origin" alone (several hints may name the same fix: it is said once).
 */
interface Hint {
  why: string
  fixes?: string[]
}

/** Why a header value is not a serialized origin as browsers send it; null when it is. */
function originProblem(origin: string): string | null {
  if (origin === '') return 'is empty'
  if (origin === 'null') return 'is the opaque origin of a sandboxed frame, a file:// page or a privacy-sensitive redirect'
  if (origin.includes(',')) return 'holds several values'
  if (/\s/.test(origin)) return 'contains whitespace'
  if (/[^\x00-\x7f]/.test(origin)) return 'has a raw non-ASCII host; browsers send the punycode form (xn--...)'
  if (/[A-Z]/.test(origin)) return 'contains upper-case letters; browsers send origins in lower case'
  const withScheme = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/.exec(origin)
  if (!withScheme) return 'is not of the form scheme://host[:port]'
  const scheme = withScheme[1]!
  if (scheme !== 'http' && scheme !== 'https') return `has the scheme "${scheme}:"; only http and https origins can be allowed`
  const rest = withScheme[2]!
  if (rest.includes('@')) return 'contains user info'
  if (/[/?#\\]/.test(rest)) return 'contains a path, query or fragment'
  const [, host, port] = /^(.*?)(?::(\d*))?$/.exec(rest)!
  if (host!.endsWith('.')) return 'ends its host with a dot'
  if (port !== undefined) {
    const number = Number(port)
    if (port === '' || port.startsWith('0') || number < 1 || number > 65535) return 'has an invalid port'
    if (number === DEFAULT_PORT[scheme]) return `names the default port ${number}, which browsers never send`
  }
  if (!SERIALIZED_ORIGIN.test(origin)) return 'does not have a valid host'
  return null
}

const isUnder = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`)
const portText = (scheme: Scheme, port: number | null) => `${port ?? DEFAULT_PORT[scheme]}`

function hintFor(entry: Entry, seen: SeenOrigin, origin: string): Hint | null {
  switch (entry.kind) {
    case 'any':
      return null
    case 'domain':
      if (!isUnder(seen.host, entry.host)) return null
      if (seen.scheme === 'http') return { why: 'requires https (the origin uses http)' }
      if (seen.port !== null) return { why: `matches the default port 443 only (port ${seen.port} differs)` }
      return null
    case 'host':
      if (seen.host === entry.host && seen.port !== null) return { why: `matches the default ports only (port ${seen.port} differs)` }
      if (seen.host.endsWith(`.${entry.host}`)) return { why: 'matches that host only, not its subdomains' }
      return null
    case 'origin': {
      if (seen.host !== entry.host) {
        return seen.host.endsWith(`.${entry.host}`) ? { why: 'matches that exact origin only, not subdomains' } : null
      }
      const differences: string[] = []
      if (seen.scheme !== entry.scheme) differences.push(`requires ${entry.scheme} (the origin uses ${seen.scheme})`)
      const entryPort = portText(entry.scheme, entry.port)
      const seenPort = portText(seen.scheme, seen.port)
      if (entryPort !== seenPort) differences.push(`requires port ${entryPort} (port ${seenPort} differs)`)
      return differences.length ? { why: differences.join(' and ') } : null
    }
    case 'localhost':
      if (seen.host === 'localhost') {
        const seenPort = portText(seen.scheme, seen.port)
        return { why: `requires port ${entry.port} (port ${seenPort} differs)`, fixes: [`add "localhost:${seenPort}"`] }
      }
      if (/^127\./.test(seen.host) || seen.host === '[::1]') {
        return {
          why: `matches the name localhost only, not the address ${seen.host}`,
          fixes: ['open the page as localhost', `add ${quoted(origin)}`],
        }
      }
      return null
  }
}
