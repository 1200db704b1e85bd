import { BoundedMap } from '../shared/bounded-map.ts'

/** Headers a page's script may read from an API answer (CORS "exposed" headers). */
export const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Idempotent-Replayed'

export const API_PREFIX = '/api/v0/'

export type HeaderSet = { headers: Record<string, string | number> }

/**
 * What every answer of one app carries: its request id, and on API routes the Origin echo.
 * Each app has its own (createApp makes it): two apps in one process share no counter and
 * no cache.
 */
export interface RequestContext {
  /** A new request id: unique across instances (a random tag per app), cheap per request (a counter). */
  nextRequestId(): string
  /**
   * Every answer carries X-Request-Id. Routes stamp it in their first hook rather than in a
   * global onRequest, which every request would pay (bench/README.md, "No global hooks on
   * API routes"). ./errors.ts stamps what a failure before any hook left unstamped.
   */
  stampRequestId(context: { set: HeaderSet }): void
  /**
   * API answers, errors included, also echo the Origin so page code can read them: CORS
   * only makes answers readable; who may call is decided by the key's allowed origins
   * (src/access/origin/match.ts). No credentials are ever allowed. Written by hand rather
   * than with @elysiajs/cors: docs/development.md, "Why CORS is hand-written".
   */
  stampApiAnswer(set: HeaderSet, origin: string | null): void
  /**
   * The headers of a JSON success on an API route, without its request id, built once per
   * Origin: a Response copies a Headers object faster than it builds one from a plain object
   * (bench/README.md, "Answer headers from a template"). The caller sets X-Request-Id on
   * the answer's own copy.
   */
  apiSuccessHeaders(origin: string | null): Headers
}

export function createRequestContext(): RequestContext {
  const tag = Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString('base64url')
  let counter = 0
  // The answer headers of the origins seen lately (an Origin is the client's to choose).
  const templates = new BoundedMap<string | null, Headers>(256)

  const nextRequestId = () => `req_${tag}${(counter++).toString(36)}`
  return {
    nextRequestId,
    stampRequestId({ set }) {
      set.headers['x-request-id'] ??= nextRequestId()
    },
    stampApiAnswer(set, origin) {
      const headers = set.headers
      headers['x-request-id'] ??= nextRequestId()
      if (origin !== null) Object.assign(headers, corsHeaders(origin))
    },
    apiSuccessHeaders(origin) {
      let headers = templates.get(origin)
      if (headers === undefined) {
        headers = new Headers(origin === null ? {} : corsHeaders(origin))
        headers.set('content-type', 'application/json;charset=utf-8')
        templates.set(origin, headers)
      }
      return headers
    },
  }
}

function corsHeaders(origin: string): Record<string, string> {
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS, vary: 'Origin' }
}
