import { Elysia } from 'elysia'
import type { AreaDeps } from '../deps.ts'

// Placeholder until the area lands: no routes yet.
export function analyticsRoutes({ access }: AreaDeps) {
  return new Elysia({ name: 'area/analytics', prefix: '/api/v0' }).use(access)
}
