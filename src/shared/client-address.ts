import { BoundedMap } from './bounded-map.ts'
import { formatIp, networkOf, parseIp, parseRange, rangesMatcher } from './ip.ts'

/**
 * The client's address (docs/api.md, "Rate limits"): the TCP peer, or, for a request whose peer
 * is a trusted proxy (TRUST_PROXY), the right-most X-Forwarded-For entry that is not
 * itself a trusted proxy. From any other peer X-Forwarded-For is ignored: anyone can
 * send it.
 */
export type ClientAddressRule = (peer: string | undefined, forwardedFor: string | null) => string

/** What Elysia hands a hook as `server` (null under `app.handle`, where there is no socket). */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null
}

/** The client address of a request, by the rule above. */
export type ClientAddressOf = (request: Request, server: PeerSource | null | undefined) => string

export function createClientAddressOf(trustedProxies: readonly string[]): ClientAddressOf {
  const rule = createClientAddressRule(trustedProxies)
  // Without trusted proxies the header is never believed, so it is not even read.
  if (trustedProxies.length === 0) return (request, server) => rule(server?.requestIP(request)?.address, null)
  return (request, server) => rule(server?.requestIP(request)?.address, request.headers.get('x-forwarded-for'))
}

/** Parses TRUST_PROXY entries (addresses or CIDR ranges) into a matcher; throws naming a bad entry. */
export function parseTrustedProxies(entries: readonly string[]): (address: string) => boolean {
  const ranges = entries.map((entry) => {
    const parsed = parseRange(entry)
    if (!parsed.ok) {
      throw new Error(
        `invalid configuration: TRUST_PROXY entry "${entry}" is not an IP address or CIDR range (like 10.0.0.0/8, 127.0.0.1 or fd00::/8): ${parsed.reason}`,
      )
    }
    return parsed.range
  })
  return rangesMatcher(ranges)
}

/** Longest client address kept from X-Forwarded-For: an entry is the client's to write. */
const MAX_WRITTEN_ADDRESS = 100

export function createClientAddressRule(trustedProxies: readonly string[]): ClientAddressRule {
  const canonical = canonicalPeers()
  if (trustedProxies.length === 0) return canonical
  const isTrusted = parseTrustedProxies(trustedProxies)
  return function clientAddress(peer, forwardedFor) {
    const address = canonical(peer)
    if (forwardedFor === null || !isTrusted(address)) return address
    const hops = forwardedFor.split(',')
    let client = address
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!.trim()
      const parsed = parseIp(hop)
      // An entry that is not an address (`203.0.113.7:443`, `unknown`, a zone id) is the
      // client as it stands: never replaced by the proxy's address.
      if (parsed === null) return hop === '' ? '(empty)' : hop.slice(0, MAX_WRITTEN_ADDRESS)
      client = formatIp(parsed)
      if (!isTrusted(client)) return client
    }
    // Every hop is a trusted proxy: the furthest one is the closest thing to the client.
    return client
  }
}

/**
 * A cache of the canonical forms of the peers read lately, one per rule (each app its own).
 * Parsing and formatting an address with BigInt arithmetic cost 3-7 µs a public-key
 * request, 15-25% of whoami and page views (bench/README.md, "The peer's address"); a
 * visitor's next request finds it here.
 */
function canonicalPeers(): (peer: string | undefined) => string {
  const known = new BoundedMap<string, string>(10_000)
  /** The socket's address in canonical form (Bun writes IPv4 peers of a dual-stack socket as ::ffff:a.b.c.d). */
  return function canonical(peer) {
    if (peer === undefined) return 'unknown'
    let address = known.get(peer)
    if (address === undefined) {
      const parsed = parseIp(peer)
      address = parsed === null ? 'unknown' : formatIp(parsed)
      known.set(peer, address)
    }
    return address
  }
}

/**
 * The part of an address one visitor's budget covers: the whole IPv4 address, or the
 * IPv6 /64 (one home or device network gets a /64, and picks addresses inside it freely).
 * What is not an address is a budget of its own.
 */
export function budgetSubject(address: string): string {
  return networkOf(address, { 4: 32, 6: 64 }) ?? address
}

/** budgetSubject with the addresses seen lately remembered: for the key chain, which asks on every public-key request. */
export function cachedBudgetSubjects(max = 10_000): (address: string) => string {
  const known = new BoundedMap<string, string>(max)
  return function subjectOf(address) {
    let subject = known.get(address)
    if (subject === undefined) {
      subject = budgetSubject(address)
      known.set(address, subject)
    }
    return subject
  }
}
