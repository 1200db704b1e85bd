import { Elysia } from 'elysia'

// Unique across instances (random per process), cheap per request (a counter).
const processTag = Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString('base64url')
let counter = 0

export function nextRequestId(): string {
  return `req_${processTag}${(counter++).toString(36)}`
}

/** Headers a page's script may read from an API answer (CORS "exposed" headers). */
export const EXPOSED_HEADERS =
  'X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Idempotent-Replayed'

const API_PREFIX = '/api/v0/'

/**
 * Every answer carries X-Request-Id. API answers, errors included, echo the Origin so page
 * code can read them: CORS only makes answers readable; who may call is decided by the
 * key's allowed origins (src/access/origin.ts). No credentials are ever allowed.
 * Written by hand rather than with @elysiajs/cors: see README, "Why CORS is hand-written".
 */
export const requestContext = new Elysia({ name: 'request-context' }).onRequest(
  function stampRequest({ request, set }) {
    const headers = set.headers as Record<string, string>
    headers['x-request-id'] = nextRequestId()
    const origin = request.headers.get('origin')
    if (origin !== null && isApiUrl(request.url)) {
      headers['access-control-allow-origin'] = origin
      headers['access-control-expose-headers'] = EXPOSED_HEADERS
      headers.vary = 'Origin'
    }
  },
)

function isApiUrl(url: string): boolean {
  // The path starts after "scheme://host"; avoid building a URL object per request.
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  return pathStart !== -1 && url.startsWith(API_PREFIX, pathStart)
}
