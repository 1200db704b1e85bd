import { lookup } from 'node:dns/promises'
import { parseIp, parseRange, rangesMatcher, type IpRange } from '../shared/ip.ts'

/**
 * Where a webhook may not go (docs/webhooks.md, "Addresses refused"): a receiver's URL is
 * anyone's to type, so without this a business could make the service call what only the
 * service can reach: itself, its database, the cloud's metadata service, the private network.
 */
const REFUSED_RANGES = [
  '0.0.0.0/8', // "this" network
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT (and Alibaba's metadata, 100.100.100.200)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local (the clouds' metadata, 169.254.169.254)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation
  '203.0.113.0/24', // documentation
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and the broadcast address
  '::/128', // unspecified
  '::1/128', // loopback
  '64:ff9b::/96', // NAT64: an IPv4 address in disguise
  '100::/64', // discard
  '2001:db8::/32', // documentation
  'fc00::/7', // unique local (private; AWS's metadata, fd00:ec2::254)
  'fe80::/10', // link-local
  'ff00::/8', // multicast
].map((text) => {
  const parsed = parseRange(text)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.range
}) satisfies IpRange[]

const isRefusedAddress = rangesMatcher(REFUSED_RANGES)

/** Resolves a host name to its addresses (node:dns by default; tests give their own). */
export type Resolve = (host: string) => Promise<string[]>

export const resolveWithDns: Resolve = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

export interface UrlGuardOptions {
  /** WEBHOOK_ALLOWED_HOSTS: host names or addresses a webhook may reach whatever they resolve to, over http too. */
  allowedHosts: readonly string[]
  resolve?: Resolve
  /** How long a name's resolution may take. */
  resolveTimeoutMs?: number
}

export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string }

/**
 * Checks a receiver's URL at registration and again before each delivery, after DNS: https
 * (http only for an allowed host), no credentials in it, and every address its host resolves
 * to outside the refused ranges, unless the operator allows the host. A name resolved at the
 * check may resolve elsewhere when fetch connects a moment later (DNS rebinding): the check
 * narrows that to a window of milliseconds, and redirects are never followed.
 */
export function createUrlGuard(options: UrlGuardOptions) {
  const allowed = new Set(options.allowedHosts.map((host) => host.trim().toLowerCase()).filter((host) => host !== ''))
  const resolve = options.resolve ?? resolveWithDns
  const timeoutMs = options.resolveTimeoutMs ?? 5_000

  return async function checkUrl(text: string): Promise<UrlVerdict> {
    let url: URL
    try {
      url = new URL(text)
    } catch {
      return { ok: false, reason: `"${text.slice(0, 100)}" is not a URL; give the full address, such as https://example.com/webhooks.` }
    }
    // URL keeps IPv6 hosts in brackets.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase()
    const hostAllowed = allowed.has(host)
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && hostAllowed)) {
      return {
        ok: false,
        reason: `must be an https:// URL (http:// only for a host the operator lists in WEBHOOK_ALLOWED_HOSTS), not ${url.protocol}//.`,
      }
    }
    if (url.username !== '' || url.password !== '') {
      return { ok: false, reason: 'must not hold a user name or password; authenticate deliveries by their signature instead.' }
    }
    if (hostAllowed) return { ok: true, url }
    let addresses: string[]
    if (parseIp(host) !== null) addresses = [host]
    else {
      try {
        addresses = await withTimeout(resolve(host), timeoutMs)
      } catch {
        return { ok: false, reason: `the host ${host} does not resolve to an address.` }
      }
    }
    if (addresses.length === 0) return { ok: false, reason: `the host ${host} does not resolve to an address.` }
    const refused = addresses.find((address) => isRefusedAddress(address))
    if (refused !== undefined) {
      return {
        ok: false,
        reason: `${host === refused ? host : `${host} resolves to ${refused}, which`} is a loopback, private, link-local or reserved address; webhooks go to public addresses only (an operator may allow a host with WEBHOOK_ALLOWED_HOSTS).`,
      }
    }
    return { ok: true, url }
  }
}

export type UrlGuard = ReturnType<typeof createUrlGuard>

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
