import type { Service } from '../../src/app.ts'

/**
 * Records which /api/v0 handlers ran, on the real app (Hono's bearer-auth tests assert
 * the handler never ran on a refusal; chain-app.ts does it on a toy app). Elysia composes
 * a route on its first request from the route's hook lists, so a last `beforeHandle`
 * added before any request runs right before the handler, after the access chain and
 * validation. Call it before the app answers anything; a route that answered already
 * would go unwatched, so tests should also see the witness fire on a granted request.
 */
export function witnessHandlers(service: Pick<Service, 'app' | 'services'>): string[] {
  const reached: string[] = []
  // A direct route (src/http/direct-route.ts) runs the chain inside its Elysia handler:
  // its own handler is watched instead, which runs after the chain and the body check.
  const direct = new Set<string>()
  for (const route of service.services.direct.routes) {
    const name = `${route.spec.method} ${route.spec.path}`
    const handler = route.handler
    route.handler = (...args) => {
      reached.push(name)
      return handler(...args)
    }
    direct.add(name)
  }
  for (const route of service.app.routes) {
    if (!route.path.startsWith('/api/v0/') || route.method === 'OPTIONS' || direct.has(`${route.method} ${route.path}`)) continue
    const name = `${route.method} ${route.path}`
    const hooks = route.hooks as { beforeHandle?: { fn: () => void }[] }
    hooks.beforeHandle = [...(hooks.beforeHandle ?? []), { fn: () => void reached.push(name) }]
  }
  return reached
}
