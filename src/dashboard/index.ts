import { Elysia } from 'elysia'
import type { Db } from '../../db/client.ts'
import type { KeyService } from '../keys/service.ts'

export interface DashboardDeps {
  db: Db
  keys: KeyService
}

// Placeholder until the dashboard lands.
export function dashboardRoutes(_deps: DashboardDeps) {
  return new Elysia({ name: 'dashboard' })
}
