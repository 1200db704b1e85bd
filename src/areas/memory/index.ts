import { Elysia } from 'elysia'
import type { AreaDeps } from '../deps.ts'

// Placeholder until the area lands: no routes yet.
export function memoryRoutes({ access }: AreaDeps) {
  return new Elysia({ name: 'area/memory', prefix: '/api/v0' }).use(access)
}
