import { Elysia } from 'elysia'
import { analyticsRoutes } from './analytics/index.ts'
import { audienceRoutes } from './audience/index.ts'
import { blogRoutes } from './blog/index.ts'
import type { AreaDeps } from './deps.ts'
import { flowRoutes } from './flow/index.ts'
import { memoryRoutes } from './memory/index.ts'
import { whoamiRoutes } from './whoami/index.ts'

/** Every /api/v0 area. Each route declares its scope with the `access` option. */
export function apiAreas(deps: AreaDeps) {
  return new Elysia({ name: 'areas' })
    .use(whoamiRoutes(deps))
    .use(analyticsRoutes(deps))
    .use(audienceRoutes(deps))
    .use(blogRoutes(deps))
    .use(flowRoutes(deps))
    .use(memoryRoutes(deps))
}
