import { BoundedMap } from '../shared/bounded-map.ts'

// Unique across instances (random per process), cheap per request (a counter).
const processTag = Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString('base64url')
let counter = 0

export function nextRequestId(): string {
  return `req_${processTag}${(counter++).toString(36)}`
}

/** Headers a page's script may read from an API answer (CORS "exposed" headers). */
export const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Idempotent-Replayed'

export const API_PREFIX = '/api/v0/'

type HeaderSet = { headers: Record<string, string | number> }

/**
 * Every answer carries X-Request-Id. Routes stamp it in their first hook rather than in a
 * global onRequest, which every request would pay (bench/README.md, "No global hooks on
 * API routes"). src/http/errors.ts stamps what a failure before any hook left unstamped.
 */
export function stampRequestId({ set }: { set: HeaderSet }): void {
  set.headers['x-request-id'] ??= nextRequestId()
}

/**
 * API answers, errors included, also echo the Origin so page code can read them: CORS
 * only makes answers readable; who may call is decided by the key's allowed origins
 * (src/access/origin.ts). No credentials are ever allowed. Written by hand rather than
 * with @elysiajs/cors: see README, "Why CORS is hand-written".
 */
export function stampApiAnswer(set: HeaderSet, origin: string | null): void {
  const headers = set.headers
  headers['x-request-id'] ??= nextRequestId()
  if (origin !== null) Object.assign(headers, corsHeaders(origin))
}

function corsHeaders(origin: string): Record<string, string> {
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS, vary: 'Origin' }
}

/** The answer headers of the origins seen lately (an Origin is the client's to choose). */
const templates = new BoundedMap<string | null, Headers>(256)

/**
 * The headers of a JSON success on an API route, without its request id, built once per
 * Origin: a Response copies a Headers object faster than it builds one from a plain object
 * (bench/README.md, "Answer headers from a template"). The caller sets X-Request-Id on
 * the answer's own copy.
 */
export function apiSuccessHeaders(origin: string | null): Headers {
  let headers = templates.get(origin)
  if (headers === undefined) {
    headers = new Headers(origin === null ? {} : corsHeaders(origin))
    headers.set('content-type', 'application/json;charset=utf-8')
    templates.set(origin, headers)
  }
  return headers
}
