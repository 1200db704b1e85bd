import { Elysia } from 'elysia'
import { analyticsRoutes, trackRoutes } from './analytics/index.ts'
import { erasureRoutes } from './analytics/erasures.ts'
import { audienceRoutes } from './audience/index.ts'
import { blogRoutes } from './blog/index.ts'
import type { AreaDeps } from './deps.ts'
import { flowRoutes } from './flow/index.ts'
import { memoryRoutes } from './memory/index.ts'
import { whoamiRoutes } from './whoami/index.ts'

/**
 * The hot /api/v0 routes, answered directly (src/http/direct-route.ts): createApp uses
 * them before its global hooks, which they do the work of themselves.
 */
export function hotAreas(deps: AreaDeps) {
  return new Elysia({ name: 'hot-areas' }).use(whoamiRoutes(deps)).use(trackRoutes(deps))
}

/** Every other /api/v0 area. Each route declares its scope with the `access` option. */
export function apiAreas(deps: AreaDeps) {
  return new Elysia({ name: 'areas' })
    .use(analyticsRoutes(deps))
    .use(erasureRoutes(deps))
    .use(audienceRoutes(deps))
    .use(blogRoutes(deps))
    .use(flowRoutes(deps))
    .use(memoryRoutes(deps))
}
