import type { ErrorCode } from '../errors.ts'
import { hashKey, readBearer } from './key-format.ts'
import type { ActiveKey, KeyStore } from './key-store.ts'
import type { IpMatcher } from './allowed-ips.ts'
import { parseIp } from '../shared/ip.ts'
import type { RouteAccess } from './scopes.ts'

/**
 * The key chain (docs/api.md, "Calling the API"), as small checks that each return a denial
 * value or null. Nothing here knows HTTP frameworks; src/http/key-chain-plugin.ts wires it to
 * Elysia and turns a denial into an answer.
 */
export interface Denial {
  code: ErrorCode
  message: string
  headers?: Record<string, string>
  /** Counts toward the client address's failure budget whatever its code (a key whose checksum fails). */
  budgeted?: true
}

/** What the chain reads of one /api/v0 request, described by its caller (the HTTP layer). */
export interface RequestFacts {
  readonly authorization: string | null
  /** The Origin header as sent, or null. */
  readonly origin: string | null
  /** For messages only. */
  readonly method: string
  /** The path as routed, for messages only. */
  readonly path: string
  /** The client address (docs/api.md, "Rate limits"); asked only when a check or a budget needs it. */
  clientAddress(): string
}

/**
 * `key`: the key found, when there was one (usage is counted per known key, refusals
 * included). `reportedOrigin`: an Origin the key's list does not allow, served because the
 * key is report-only; undefined otherwise. `refusedIp` / `reportedIp`: the same for a
 * private key's client address (docs/api.md, "Allowed client addresses").
 */
export type AccessDecision =
  | { ok: true; key: ActiveKey; reportedOrigin?: string | null; reportedIp?: string }
  | {
      ok: false
      denial: Denial
      key: ActiveKey | null
      refusedOrigin?: string | null
      reportedOrigin?: string | null
      refusedIp?: string
      reportedIp?: string
    }

const REALM = 'Bearer realm="api"'
const INVALID_TOKEN = `${REALM}, error="invalid_token"`

export async function authorize(request: RequestFacts, route: RouteAccess, keys: KeyStore, now: number): Promise<AccessDecision> {
  const bearer = readBearer(request.authorization)
  if (!bearer.ok) {
    const challenge = bearer.code === 'missing_api_key' ? REALM : INVALID_TOKEN
    const denial: Denial = { code: bearer.code, message: bearer.message, headers: { 'www-authenticate': challenge } }
    if (bearer.checksumFailed) denial.budgeted = true
    return deny(denial, null)
  }
  return checkKey(await keys.resolve(hashKey(bearer.key)), request, route, now)
}

function checkKey(key: ActiveKey | null, request: RequestFacts, route: RouteAccess, now: number): AccessDecision {
  const unknown = checkKnown(key)
  if (unknown) return deny(unknown, null)
  const known = key!
  const expired = checkExpiry(known, now)
  if (expired) return deny(expired, known)
  if (known.ips !== null) return checkPrivateKey(known, known.ips, request, route)
  const originRefusal = checkOrigin(known, request.origin)
  // Report-only keys are served whatever the Origin; the origin is counted, not refused.
  if (originRefusal && !known.reportOnly) return { ok: false, denial: originRefusal, key: known, refusedOrigin: request.origin }
  const denial = checkPublicEndpoint(known, route, request) ?? checkScope(known, route)
  if (denial) return originRefusal ? { ok: false, denial, key: known, reportedOrigin: request.origin } : deny(denial, known)
  return originRefusal ? { ok: true, key: known, reportedOrigin: request.origin } : { ok: true, key: known }
}

/** Check 5 for a private key with allowedIps, then the rest of the chain. */
function checkPrivateKey(key: ActiveKey, ips: IpMatcher, request: RequestFacts, route: RouteAccess): AccessDecision {
  const address = request.clientAddress()
  if (ips.allows(address)) {
    const denial = checkScope(key, route)
    return denial ? deny(denial, key) : { ok: true, key }
  }
  // Report-only keys are served from any address; the address is counted, not refused.
  if (!key.ipReportOnly) return { ok: false, denial: ipRefusal(key, address), key, refusedIp: address }
  const denial = checkScope(key, route)
  return denial ? { ok: false, denial, key, reportedIp: address } : { ok: true, key, reportedIp: address }
}

export function ipRefusal(key: ActiveKey, address: string): Denial {
  const listed =
    key.allowedIps.length > 10
      ? `${key.allowedIps.slice(0, 10).join(', ')} and ${key.allowedIps.length - 10} more`
      : key.allowedIps.join(', ')
  // Only an address can be allowed: the fix offered must be one the key rules accept.
  const fix =
    parseIp(address) === null
      ? `"${address}" is not an IP address: the proxy in front of the service passed it in X-Forwarded-For, and no allowed-IPs entry can match it. Fix what the proxy sends, or call from an allowed address.`
      : `Add ${address} (or its range) to the key's allowed IPs in the dashboard or with PATCH /admin/v0/keys/:id, or call from an allowed address.`
  return {
    code: 'ip_not_allowed',
    message: `This private key may only be used from ${listed}; this request came from ${address}. ${fix}`,
  }
}

export function checkKnown(key: ActiveKey | null): Denial | null {
  if (key !== null && !key.revoked) return null
  return {
    code: 'invalid_api_key',
    message:
      key === null
        ? 'This API key does not exist. Check that you copied the whole key, and that it belongs to this environment.'
        : 'This API key has been revoked. Create a new key in the dashboard (Settings, then Developers) and use it instead.',
    headers: { 'www-authenticate': INVALID_TOKEN },
  }
}

export function checkExpiry(key: ActiveKey, now: number): Denial | null {
  if (key.expiresAt === null || now < key.expiresAt) return null
  return {
    code: 'expired_api_key',
    message: `This API key expired at ${new Date(key.expiresAt).toISOString()}. Create a new key, or extend this key's expiry in the dashboard.`,
    headers: { 'www-authenticate': INVALID_TOKEN },
  }
}

export function checkOrigin(key: ActiveKey, origin: string | null): Denial | null {
  if (key.origins === null) return null
  const result = key.origins.match(origin)
  if (result.allowed) return null
  return { code: 'origin_not_allowed', message: result.reason }
}

export function checkPublicEndpoint(key: ActiveKey, route: RouteAccess, request: Pick<RequestFacts, 'method' | 'path'>): Denial | null {
  if (key.type === 'private' || route.public) return null
  return {
    code: 'public_key_not_allowed',
    message: `Public keys (pk_) cannot call ${request.method} ${request.path}. Call it from your server with a private key (sk_) that holds the scope it needs.`,
  }
}

export function checkScope(key: ActiveKey, route: RouteAccess): Denial | null {
  if (route.scope === null || key.scopes.has(route.scope)) return null
  const held = key.scopeList.length ? key.scopeList.join(', ') : 'none'
  return {
    code: 'insufficient_scope',
    message: `This endpoint needs the scope ${route.scope}; the key holds ${held}. Add ${route.scope} to the key's scopes.`,
    headers: {
      'www-authenticate': `${REALM}, error="insufficient_scope", scope="${route.scope}"`,
    },
  }
}

function deny(denial: Denial, key: ActiveKey | null): AccessDecision {
  return { ok: false, denial, key }
}
