import { BlockList, isIP } from 'node:net'

/**
 * The client's address (contract section 8): the TCP peer, or, for a request whose peer
 * is a trusted proxy (TRUST_PROXY), the right-most X-Forwarded-For entry that is not
 * itself a trusted proxy. From any other peer X-Forwarded-For is ignored: anyone can
 * send it.
 */
export type ClientAddressRule = (peer: string | undefined, forwardedFor: string | null) => string

/** What Elysia hands a hook as `server` (null under `app.handle`, where there is no socket). */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null
}

/** The client address of a request, by the rule of contract section 8. */
export type ClientAddressOf = (request: Request, server: PeerSource | null | undefined) => string

export function createClientAddressOf(trustedProxies: readonly string[]): ClientAddressOf {
  const rule = createClientAddressRule(trustedProxies)
  // Without trusted proxies the header is never believed, so it is not even read.
  if (trustedProxies.length === 0) return (request, server) => rule(server?.requestIP(request)?.address, null)
  return (request, server) => rule(server?.requestIP(request)?.address, request.headers.get('x-forwarded-for'))
}

/** Parses TRUST_PROXY entries (addresses or CIDR ranges); throws naming a bad entry. */
export function parseTrustedProxies(entries: readonly string[]): BlockList {
  const trusted = new BlockList()
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/')
    const family = isIP(address)
    const prefix = bits === undefined ? undefined : Number(bits)
    const maxBits = family === 6 ? 128 : 32
    const validPrefix = prefix === undefined || (/^\d{1,3}$/.test(bits!) && prefix <= maxBits)
    if (family === 0 || extra !== undefined || !validPrefix) {
      throw new Error(
        `invalid configuration: TRUST_PROXY entry "${entry}" is not an IP address or CIDR range (like 10.0.0.0/8, 127.0.0.1 or fd00::/8)`,
      )
    }
    const type = family === 6 ? 'ipv6' : 'ipv4'
    if (prefix === undefined) trusted.addAddress(address, type)
    else trusted.addSubnet(address, prefix, type)
  }
  return trusted
}

export function createClientAddressRule(trustedProxies: readonly string[]): ClientAddressRule {
  if (trustedProxies.length === 0) return (peer) => normalise(peer)
  const trusted = parseTrustedProxies(trustedProxies)
  const isTrusted = (address: string) => {
    const family = isIP(address)
    return family !== 0 && trusted.check(address, family === 6 ? 'ipv6' : 'ipv4')
  }
  return function clientAddress(peer, forwardedFor) {
    const address = normalise(peer)
    if (forwardedFor === null || !isTrusted(address)) return address
    const hops = forwardedFor.split(',')
    let client = address
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!.trim()
      // A hop that is no address at all is where the chain can no longer be believed.
      if (isIP(hop) === 0) return client
      client = normalise(hop)
      if (!isTrusted(hop)) return client
    }
    // Every hop is a trusted proxy: the furthest one is the closest thing to the client.
    return client
  }
}

/** `address` is an IP address: the socket's (as Bun writes it) or a hop checked by isIP. */
function normalise(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown'
  // Bun reports IPv4 peers of a dual-stack socket as ::ffff:a.b.c.d. The address is valid,
  // so a tail after "::ffff:" with a dot and no colon is the dotted IPv4 form.
  if (address.startsWith('::ffff:') && address.includes('.', 7) && !address.includes(':', 7)) return address.slice(7)
  return address.toLowerCase()
}

/**
 * The part of an address one visitor's budget covers: the whole IPv4 address, or the
 * IPv6 /64 (one home or device network gets a /64, and picks addresses inside it freely).
 */
export function budgetSubject(address: string): string {
  if (!address.includes(':')) return address
  const groups = expandIpv6(address)
  return groups === null ? address : `${groups.slice(0, 4).join(':')}::/64`
}

function expandIpv6(address: string): string[] | null {
  const [head = '', tail] = address.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const missing = 8 - left.length - right.length
  if (tail === undefined ? missing !== 0 : missing < 1) return null
  const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right]
  return groups.map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''))
}
