import { domainToASCII } from 'node:url'
import { parse as parseDomain } from 'tldts'
import { formatIp, parseIpv4, parseIpv6 } from '../../shared/ip.ts'

/**
 * The entry side of allowed origins: what people type, validated strictly and stored in
 * one canonical form (see src/access/origin/index.ts for the rules and their interpretations).
 */

export type ParseOriginResult = { ok: true; entry: string } | { ok: false; reason: string }

export type ParseOriginsResult = { ok: true; entries: string[] } | { ok: false; errors: { index: number; value: string; reason: string }[] }

export type Scheme = 'http' | 'https'

/** A validated entry in structured form; `canonical` is what gets stored. */
export type Entry =
  | { kind: 'any'; canonical: '*' }
  /** Registrable domain: https, default port, the domain and every subdomain. */
  | { kind: 'domain'; canonical: string; host: string }
  /** Host below a registrable domain: exactly that host, http and https, default ports. */
  | { kind: 'host'; canonical: string; host: string }
  /** `scheme://host[:port]`: exactly that origin. `port` null means the scheme's default. */
  | { kind: 'origin'; canonical: string; scheme: Scheme; host: string; port: number | null }
  /** `localhost:PORT`: http and https on localhost at that port. */
  | { kind: 'localhost'; canonical: string; port: number }

export type ParsedEntry = { ok: true; value: Entry } | { ok: false; reason: string }

export const DEFAULT_PORT: Record<Scheme, number> = { http: 80, https: 443 }

const EXAMPLES = 'e.g. "example.com" (with its subdomains), "app.example.com", ' + '"https://app.example.com:8443", "localhost:3000" or "*"'

// Bounds the work done on hostile input; real entries are far shorter (host <= 253).
const MAX_ENTRY_LENGTH = 512

const SCHEME = /^[a-z][a-z0-9+.-]*$/
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/
// What WHATWG URL would read as an IPv4 address: a last label that is a number.
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/
const DIGITS = /^\d+$/
const NOT_IN_HOST_NAME = /[^a-z0-9._\-\u0080-\uffff]/

const accepted = (value: Entry): ParsedEntry => ({ ok: true, value })
const refused = (reason: string): ParsedEntry => ({ ok: false, reason })

/** A value as it is shown in a message: JSON-quoted, so odd characters stay visible. */
export const quoted = (text: string): string => JSON.stringify(text)

export function parseAllowedOrigin(raw: string): ParseOriginResult {
  const parsed = parseEntry(raw)
  return parsed.ok ? { ok: true, entry: parsed.value.canonical } : { ok: false, reason: parsed.reason }
}

export function parseAllowedOrigins(raw: readonly string[]): ParseOriginsResult {
  const entries: string[] = []
  const seen = new Set<string>()
  const errors: { index: number; value: string; reason: string }[] = []
  if (!Array.isArray(raw)) {
    return {
      ok: false,
      errors: [{ index: 0, value: String(raw), reason: `allowed origins must be a list of strings, ${EXAMPLES}` }],
    }
  }
  raw.forEach((value: unknown, index) => {
    const parsed = parseEntry(value)
    if (!parsed.ok) {
      errors.push({ index, value: typeof value === 'string' ? value : String(value), reason: parsed.reason })
    } else if (!seen.has(parsed.value.canonical)) {
      seen.add(parsed.value.canonical)
      entries.push(parsed.value.canonical)
    }
  })
  return errors.length > 0 ? { ok: false, errors } : { ok: true, entries }
}

export function parseEntry(raw: unknown): ParsedEntry {
  if (typeof raw !== 'string') return refused(`an allowed origin must be a string, ${EXAMPLES}`)
  const trimmed = raw.trim()
  const shown = quoted(trimmed)
  if (trimmed === '') return refused(`the entry is empty; write one origin per entry, ${EXAMPLES}`)
  if (trimmed.length > MAX_ENTRY_LENGTH) {
    return refused(`the entry is ${trimmed.length} characters long; a host name has at most 253, ${EXAMPLES}`)
  }
  if (/[\t\n\v\f\r]/.test(trimmed)) return refused(`${shown} contains a tab or line break; remove it and give one origin per entry`)
  if (/\s/.test(trimmed)) return refused(`${shown} contains a space; remove it and give one origin per entry`)
  if (/[\x00-\x1f\x7f]/.test(trimmed)) return refused(`${shown} contains a control character; remove it`)

  let entry = trimmed.toLowerCase()
  if (entry === '*') return accepted({ kind: 'any', canonical: '*' })
  if (entry === 'null') {
    return refused(
      `${shown} is the opaque origin of sandboxed frames and file:// pages and cannot be allowed on its own; ` +
        'list the real site (e.g. "https://app.example.com") or use "*" to allow every request',
    )
  }
  if (entry.includes('*')) return wildcardReason(entry, shown)

  // A protocol alone: `https://`, `https:`, `https:/`.
  const protocolOnly = /^([a-z][a-z0-9+.-]*):\/{0,3}$/.exec(entry)
  if (protocolOnly && (protocolOnly[1] === 'http' || protocolOnly[1] === 'https')) {
    return refused(`${shown} is a protocol alone; add the host after it, e.g. "${protocolOnly[1]}://app.example.com"`)
  }
  if (protocolOnly && entry.endsWith('/')) return refused(unsupportedScheme(protocolOnly[1]!, shown))

  if (entry.endsWith('/')) entry = entry.slice(0, -1)

  const separator = entry.indexOf('://')
  if (separator !== -1) {
    const scheme = entry.slice(0, separator)
    if (!SCHEME.test(scheme)) return refused(`${shown} does not start with a valid scheme; write "https://host" or "http://host"`)
    if (scheme !== 'http' && scheme !== 'https') return refused(unsupportedScheme(scheme, shown))
    return parseFullForm(scheme, entry.slice(separator + 3), shown)
  }

  // `scheme:rest` without `//` (`https:example.com`, `mailto:x`), told apart from
  // `host:port` by the host's dot or the digits of a port.
  const schemeColon = /^([a-z][a-z0-9+.-]*):(.*)$/.exec(entry)
  if (schemeColon && schemeColon[1] !== 'localhost' && !schemeColon[1]!.includes('.') && !/^\d/.test(schemeColon[2]!)) {
    const scheme = schemeColon[1]!
    if (scheme === 'http' || scheme === 'https') {
      return refused(`${shown} is missing "//" after the scheme; write "${scheme}://${schemeColon[2]!.replace(/^\/+/, '')}"`)
    }
    return refused(unsupportedScheme(scheme, shown))
  }
  return parseBareForm(entry, shown)
}

function unsupportedScheme(scheme: string, shown: string): string {
  return `${shown} uses the scheme "${scheme}:"; only http and https can be allowed, e.g. "https://app.example.com"`
}

function wildcardReason(entry: string, shown: string): ParsedEntry {
  const wildcard = /^(?:(https?):\/\/)?\*\.([^*]+?)\/?$/.exec(entry)
  if (wildcard) {
    const rest = parseEntry(wildcard[2])
    if (rest.ok && rest.value.kind === 'domain') {
      return refused(
        `${shown} is a wildcard, which is not supported: write "${rest.value.canonical}", which already covers ${rest.value.canonical} ` +
          `and all its subdomains over https`,
      )
    }
    if (rest.ok && rest.value.kind === 'host') {
      return refused(
        `${shown} is a wildcard, which is not supported: a registrable domain such as "${registrableDomain(rest.value.host) ?? rest.value.host}" ` +
          `covers all its subdomains over https; otherwise list each host, e.g. "${rest.value.canonical}"`,
      )
    }
  }
  return refused(
    `${shown} has a wildcard; one is only allowed as the lone entry "*" (every origin), and a domain entry such as "example.com" ` +
      `already covers all its subdomains`,
  )
}

/** `rest` is what follows `scheme://`. */
function parseFullForm(scheme: Scheme, rest: string, shown: string): ParsedEntry {
  if (rest === '') return refused(`${shown} has no host; write e.g. "${scheme}://app.example.com"`)
  const authority = authorityProblem(rest, shown, `${scheme}://`)
  if (authority) return refused(authority)

  const split = splitHostPort(rest, shown)
  if (!split.ok) return refused(split.reason)
  const { host: rawHost, port: rawPort } = split

  let port: number | null = null
  if (rawPort !== null) {
    const parsedPort = parsePort(rawPort, shown)
    if (typeof parsedPort === 'string') return refused(parsedPort)
    port = parsedPort === DEFAULT_PORT[scheme] ? null : parsedPort
  }
  const origin = (host: string): Entry => ({
    kind: 'origin',
    canonical: `${scheme}://${host}${port === null ? '' : `:${port}`}`,
    scheme,
    host,
    port,
  })

  if (rawHost.startsWith('[')) {
    const ipv6 = ipv6Literal(rawHost)
    if (ipv6 === null) return refused(`${shown} has an invalid IPv6 address; write e.g. "http://[::1]:3000"`)
    return accepted(origin(ipv6))
  }
  // localhost without a port in any form: a dev server has one. A
  // default port written out counts as none: it would be stored as "https://localhost".
  if (rawHost === 'localhost') {
    if (port === null) {
      return refused(
        `${shown} needs a port; write "localhost:PORT" or "${scheme}://localhost:PORT" with your dev server's port, e.g. "localhost:3000" or "http://localhost:3000"`,
      )
    }
    return accepted(origin('localhost'))
  }
  const hostName = checkHostName(rawHost, shown)
  if (!hostName.ok) return refused(hostName.reason)
  if (hostName.ip) return accepted(origin(hostName.host))
  const kind = classifyDomain(hostName.host, shown)
  if (kind !== 'domain' && kind !== 'host') return refused(kind.reason)
  return accepted(origin(hostName.host))
}

function parseBareForm(entry: string, shown: string): ParsedEntry {
  if (DIGITS.test(entry) || /^:\d*$/.test(entry)) {
    return refused(
      `${shown} is a port alone; give the host too, e.g. "localhost:${entry.replace(':', '') || '3000'}" or "https://app.example.com:${entry.replace(':', '') || '8443'}"`,
    )
  }
  const authority = authorityProblem(entry, shown, '')
  if (authority) return refused(authority)

  if (entry.startsWith('[') || (entry.match(/:/g)?.length ?? 0) > 1) {
    const split = splitHostPort(entry, shown)
    const port = split.ok && split.port !== null ? split.port : 'PORT'
    const host = split.ok ? split.host : `[${entry.replace(/^\[|\]$/g, '')}]`
    return refused(`${shown} is an IP address, which is only allowed in the full form; write "http://${host}:${port}" (or https)`)
  }

  const colon = entry.lastIndexOf(':')
  const rawHost = colon === -1 ? entry : entry.slice(0, colon)
  const rawPort = colon === -1 ? null : entry.slice(colon + 1)

  if (rawHost === 'localhost') {
    if (rawPort === null) {
      return refused(`${shown} needs a port; write "localhost:PORT" with your dev server's port, e.g. "localhost:3000"`)
    }
    const port = parsePort(rawPort, shown)
    if (typeof port === 'string') return refused(port)
    return accepted({ kind: 'localhost', canonical: `localhost:${port}`, port })
  }

  const hostName = checkHostName(rawHost, shown)
  if (!hostName.ok) return refused(hostName.reason)
  const { host } = hostName
  if (hostName.ip) {
    return refused(
      `${shown} is an IP address, which is only allowed in the full form; write "http://${host}:${rawPort ?? 'PORT'}" (or https)`,
    )
  }
  if (rawPort !== null) {
    const port = parsePort(rawPort, shown)
    if (typeof port === 'string') return refused(port)
    const kind = classifyDomain(host, shown)
    if (kind !== 'domain' && kind !== 'host') return refused(kind.reason)
    const full = port === 443 ? `https://${host}` : `https://${host}:${port}`
    return refused(`${shown} has a port but no scheme; write "${full}" (or "http://${host}:${port}") to allow exactly that origin`)
  }
  const kind = classifyDomain(host, shown)
  if (kind === 'domain') return accepted({ kind: 'domain', canonical: host, host })
  if (kind === 'host') return accepted({ kind: 'host', canonical: host, host })
  return refused(kind.reason)
}

/** User info, path, query or fragment in what should be `host[:port]`. */
function authorityProblem(authority: string, shown: string, prefix: string): string | null {
  const at = authority.lastIndexOf('@')
  if (at !== -1) {
    const host = authority.slice(at + 1).split(/[/?#\\]/)[0] || 'host'
    return `${shown} contains user info ("...@"); an origin has none, write only "${prefix}${host}"`
  }
  const extra = /[/?#\\]/.exec(authority)
  if (!extra) return null
  const what = extra[0] === '?' ? 'a query (?...)' : extra[0] === '#' ? 'a fragment (#...)' : extra[0] === '\\' ? 'a backslash' : 'a path'
  const base = authority.slice(0, extra.index)
  return `${shown} contains ${what}; an origin has none, write only "${prefix}${base}"`
}

type HostPort = { ok: true; host: string; port: string | null } | { ok: false; reason: string }

function splitHostPort(authority: string, shown: string): HostPort {
  if (authority.startsWith('[')) {
    const end = authority.indexOf(']')
    if (end === -1) {
      return { ok: false, reason: `${shown} opens "[" without closing "]"; write an IPv6 address as "http://[::1]:3000"` }
    }
    const after = authority.slice(end + 1)
    if (after === '') return { ok: true, host: authority.slice(0, end + 1), port: null }
    if (!after.startsWith(':')) {
      return { ok: false, reason: `${shown} has text after "]"; write an IPv6 origin as "http://[::1]:3000"` }
    }
    return { ok: true, host: authority.slice(0, end + 1), port: after.slice(1) }
  }
  const colons = authority.split(':').length - 1
  if (colons > 1) {
    return { ok: false, reason: `${shown} looks like an IPv6 address without brackets; write it as "http://[${authority}]:PORT"` }
  }
  if (colons === 0) return { ok: true, host: authority, port: null }
  const colon = authority.indexOf(':')
  return { ok: true, host: authority.slice(0, colon), port: authority.slice(colon + 1) }
}

/** The port as a number, or why it is refused. */
function parsePort(digits: string, shown: string): number | string {
  if (digits === '') return `${shown} ends with ":" but no port; remove the ":" or add a port between 1 and 65535`
  if (!DIGITS.test(digits)) return `the port "${digits}" in ${shown} is not a number; give a port between 1 and 65535`
  const port = Number(digits)
  if (port < 1 || port > 65535) return `the port ${digits} in ${shown} is outside 1-65535; give the port your site is served on`
  if (digits.length > 1 && digits.startsWith('0')) return `the port "${digits}" in ${shown} has leading zeros; write it as ${port}`
  return port
}

type HostName = { ok: true; host: string; ip: boolean } | { ok: false; reason: string }

/**
 * Shape checks of a host name (before and after IDN conversion).
 * Returns the ASCII host, and whether it is an IPv4 literal.
 */
function checkHostName(raw: string, shown: string): HostName {
  const bad = (reason: string): HostName => ({ ok: false, reason })
  if (raw === '') return bad(`${shown} has no host; ${EXAMPLES}`)
  if (raw.startsWith('.')) return bad(`${shown} starts with a dot; remove it (a domain entry already covers its subdomains)`)
  if (raw.endsWith('.')) return bad(`${shown} ends with a dot; remove the trailing dot`)
  if (raw.includes('..')) return bad(`${shown} has an empty label (".."); remove the extra dot`)
  const foreign = NOT_IN_HOST_NAME.exec(raw)
  if (foreign) {
    return bad(`${shown} contains "${foreign[0]}", which cannot appear in a host name; use letters, digits, "-" and "."`)
  }

  // Any label starting with `xn--` must be valid punycode, which domainToASCII checks;
  // for ASCII input it must not change anything else.
  let host = raw
  if (/[^\x00-\x7f]/.test(raw) || raw.includes('xn--')) {
    host = domainToASCII(raw)
    if (host === '') return bad(`${shown} is not a valid internationalised domain name; check its spelling`)
    if (!/[^\x00-\x7f]/.test(raw) && host !== raw) return bad(`${shown} is not a valid host name`)
  }

  const labels = host.split('.')
  const last = labels[labels.length - 1]!
  if (NUMERIC_LABEL.test(last)) {
    if (parseIpv4(host) !== null) return { ok: true, host, ip: true }
    return bad(`${shown} is not a valid IPv4 address; write four decimal numbers 0-255 without leading zeros, e.g. "http://127.0.0.1:3000"`)
  }
  if (host.length > 253) return bad(`${shown} is ${host.length} characters long as a host name; the limit is 253`)
  for (const label of labels) {
    if (label === '') return bad(`${shown} has an empty label; remove the extra dot`)
    if (label.length > 63) {
      return bad(`${shown} has a label of ${label.length} characters ("${label.slice(0, 20)}..."); the limit is 63`)
    }
    if (label.startsWith('-') || label.endsWith('-')) {
      return bad(`${shown} has a label starting or ending with "-" ("${label}"); remove the hyphen`)
    }
    if (!LABEL.test(label)) return bad(`${shown} has an invalid label "${label}"; use letters, digits and "-"`)
  }
  return { ok: true, host, ip: false }
}

/** Classifies a valid ASCII host by the Public Suffix List (private section included). */
function classifyDomain(host: string, shown: string): 'domain' | 'host' | { reason: string } {
  const parsed = parseDomain(host, { allowPrivateDomains: true, extractHostname: false, detectIp: false })
  // tldts answers unknown TLDs with the implicit "*" rule: neither ICANN nor private.
  if (!parsed.isIcann && !parsed.isPrivate) {
    const tld = host.slice(host.lastIndexOf('.') + 1)
    const local = tld === 'localhost' ? `; for local development use "localhost:PORT"` : ''
    return {
      reason:
        `${shown} is not under a known public suffix ("${tld}" is not in the Public Suffix List); ` +
        `use the site's public domain name${local}`,
    }
  }
  if (parsed.domain === null || parsed.publicSuffix === host) {
    return {
      reason:
        `${shown} is a public suffix (${suffixExamples(host)}), shared by unrelated sites; ` +
        `give your own domain below it, e.g. "example.${host}"`,
    }
  }
  return parsed.domain === host ? 'domain' : 'host'
}

/** Other public suffixes, never the one being explained (which is already named). */
function suffixExamples(host: string): string {
  const others = ['com', 'co.uk', 'github.io'].filter((suffix) => suffix !== host).map((suffix) => `"${suffix}"`)
  return `like ${others.slice(0, -1).join(', ')} or ${others.at(-1)}`
}

function registrableDomain(host: string): string | null {
  return parseDomain(host, { allowPrivateDomains: true, extractHostname: false }).domain
}

/**
 * `[v6]` as a browser serializes it (`[::1]`), or null. Checked strictly by the shared IP
 * parser: the URL parser would accept zone ids and other forms an entry may not use.
 */
function ipv6Literal(bracketed: string): string | null {
  if (!bracketed.endsWith(']')) return null
  const inner = bracketed.slice(1, -1)
  const value = /^[0-9a-f:.]+$/.test(inner) ? parseIpv6(inner) : null
  return value === null ? null : `[${formatIp({ family: 6, value })}]`
}
