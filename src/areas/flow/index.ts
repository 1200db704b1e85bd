import { Elysia } from 'elysia'
import type { AreaDeps } from '../deps.ts'

// Placeholder until the area lands: no routes yet.
export function flowRoutes({ access }: AreaDeps) {
  return new Elysia({ name: 'area/flow', prefix: '/api/v0' }).use(access)
}
