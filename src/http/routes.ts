/** A route as `app.routes` lists it. */
export interface RouteShape {
  method: string
  path: string
}

/**
 * Which methods the app answers on a path, read from its route list: the CORS preflight
 * names them, and a known path asked with another method answers 405 with `Allow`. The
 * list is read on first use, once every plugin has registered its routes.
 */
export function createMethodTable(routes: () => readonly RouteShape[]) {
  let table: { pattern: RegExp; methods: Set<string> }[] | null = null

  /** The methods of every route whose path matches, in a stable order; [] for an unknown path. */
  return function methodsFor(path: string): string[] {
    table ??= buildTable(routes())
    const methods = new Set<string>()
    // Static and parameter routes can share a path (`api-keys/new` and `api-keys/:id`).
    for (const row of table) if (row.pattern.test(path)) for (const method of row.methods) methods.add(method)
    return METHOD_ORDER.filter((method) => methods.has(method)).concat([...methods].filter((m) => !METHOD_ORDER.includes(m)))
  }
}

export type MethodTable = ReturnType<typeof createMethodTable>

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']

function buildTable(routes: readonly RouteShape[]) {
  const byPath = new Map<string, Set<string>>()
  for (const { method, path } of routes) {
    // OPTIONS is the preflight's wildcard, which would make every /api/v0 path "known".
    if (method === 'OPTIONS') continue
    const methods = byPath.get(path) ?? new Set<string>()
    methods.add(method)
    // Elysia answers HEAD on every GET route.
    if (method === 'GET') methods.add('HEAD')
    byPath.set(path, methods)
  }
  return [...byPath].map(([path, methods]) => ({
    // `/dashboard/` also answers `/dashboard`: one optional trailing slash either way.
    pattern: new RegExp(
      '^' +
        (path.length > 1 ? path.replace(/\/$/, '') : path)
          .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
          .replace(/:[^/]+/g, '[^/]+')
          .replace(/\*$/, '.*') +
        '/?$',
    ),
    methods,
  }))
}
