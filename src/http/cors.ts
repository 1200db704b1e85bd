import { Elysia } from 'elysia'
import { EXPOSED_HEADERS } from './request-context.ts'

export interface RouteShape {
  method: string
  path: string
}

/**
 * Answers CORS preflights for /api/v0/* without a key: 204, the request's Origin echoed,
 * the route's own methods, and a two-hour cache. `routes` is read at request time, so the
 * app hands in its final route list after every area is registered.
 */
export function preflight(routes: () => readonly RouteShape[]) {
  let table: { pattern: RegExp; methods: string }[] | null = null

  function methodsFor(path: string): string {
    table ??= buildTable(routes())
    for (const row of table) if (row.pattern.test(path)) return row.methods
    // Unknown paths still get a readable answer (a 404 naming the right path), so the
    // preflight lets the browser send the request.
    return 'GET, HEAD, POST, PATCH, DELETE'
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

function buildTable(routes: readonly RouteShape[]) {
  const byPath = new Map<string, Set<string>>()
  for (const { method, path } of routes) {
    if (!path.startsWith('/api/v0/') || method === 'OPTIONS') continue
    const methods = byPath.get(path) ?? new Set<string>()
    methods.add(method)
    if (method === 'GET') methods.add('HEAD')
    byPath.set(path, methods)
  }
  return [...byPath].map(([path, methods]) => ({
    pattern: new RegExp(
      '^' + path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*$/, '.*') + '/?$',
    ),
    methods: [...methods].join(', '),
  }))
}
