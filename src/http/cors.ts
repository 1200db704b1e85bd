import { Elysia } from 'elysia'
import { EXPOSED_HEADERS } from './request-context.ts'
import type { MethodTable } from './routes.ts'

/**
 * Answers CORS preflights for /api/v0/* without a key: 204, the request's Origin echoed,
 * the route's own methods (from the app's route list, src/http/routes.ts), and a two-hour
 * cache.
 */
export function preflight(methodsOf: MethodTable) {
  function methodsFor(path: string): string {
    const methods = methodsOf(path)
    // Unknown paths still get a readable answer (a 404 naming the right path), so the
    // preflight lets the browser send the request.
    return methods.length > 0 ? methods.join(', ') : 'GET, HEAD, POST, PATCH, DELETE'
  }

  return new Elysia({ name: 'cors-preflight' }).options('/api/v0/*', ({ request, path, set }) => {
    const origin = request.headers.get('origin')
    const headers = set.headers as Record<string, string>
    headers['access-control-allow-origin'] = origin ?? '*'
    headers['access-control-allow-methods'] = methodsFor(path)
    headers['access-control-allow-headers'] = 'Authorization, Content-Type, Idempotency-Key'
    headers['access-control-expose-headers'] = EXPOSED_HEADERS
    headers['access-control-max-age'] = '7200'
    headers.vary = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers'
    set.status = 204
    return null
  })
}
