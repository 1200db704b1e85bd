import { Elysia } from 'elysia'
import type { Database } from '../db/client.ts'
import { createKeyStore, type KeyStoreOptions } from './access/key-store.ts'
import { createLastUsedRecorder } from './access/last-used.ts'
import { createAccessPlugin } from './access/plugin.ts'
import { adminRoutes } from './admin/index.ts'
import { dashboardRoutes } from './dashboard/index.ts'
import { sdkRoutes } from './sdk/index.ts'
import { apiAreas } from './areas/index.ts'
import type { AreaDeps } from './areas/deps.ts'
import { preflight, type RouteShape } from './http/cors.ts'
import { errorHandling } from './http/errors.ts'
import { healthRoutes } from './http/health.ts'
import { apiReference } from './http/openapi.ts'
import { stampRequestId } from './http/request-context.ts'
import { createKeyService } from './keys/service.ts'

export interface AppOptions {
  database: Database
  adminToken: string
  keyCache?: KeyStoreOptions
  /** Clock for the key chain (expiry, lastUsedAt); tests move it. */
  now?: () => number
  log?: (line: string) => void
}

/**
 * Builds the whole service without listening: src/index.ts serves it, tests call
 * `app.handle()`. Errors render in one place; API routes carry the access chain.
 */
export function createApp(options: AppOptions) {
  const { db } = options.database
  const keyStore = createKeyStore(db, options.keyCache)
  const lastUsed = createLastUsedRecorder(db, {
    // Never String(e): Drizzle's message holds the SQL and its parameters (a key id).
    onError: (e) => (options.log ?? console.error)(`lastUsedAt write failed: ${driverReason(e)}`),
  })
  const keys = createKeyService(db, (hash) => keyStore.invalidate(hash))
  const access = createAccessPlugin({ keys: keyStore, lastUsed, now: options.now })
  const shutdownTasks: (() => Promise<void>)[] = []
  const area: AreaDeps = { db, access, onShutdown: (task) => void shutdownTasks.push(task) }

  // The preflight answers with each route's methods: it reads the final route list.
  let routes: readonly RouteShape[] = []
  // Everything outside /api/v0 gets its request id from one local hook; API routes stamp
  // theirs in the access chain's first hook.
  const surfaces = new Elysia({ name: 'surfaces' })
    .onTransform(stampRequestId)
    .use(healthRoutes(options.database.ping))
    .use(apiReference)
    .use(preflight(() => routes))
    .use(adminRoutes({ db, keys, adminToken: options.adminToken }))
    .use(sdkRoutes())
    .use(dashboardRoutes({ db, keys }))

  const app = new Elysia().use(errorHandling(options.log)).use(surfaces).use(apiAreas(area))

  routes = app.routes

  return {
    app,
    services: { keys, keyStore, lastUsed },
    /** Writes what is buffered (events, lastUsedAt); call before closing the database. */
    async drain() {
      await Promise.all(shutdownTasks.map((task) => task()))
      await lastUsed.close()
    },
  }
}

export type Service = ReturnType<typeof createApp>

/** The driver's own reason for a failed query (code and message), without SQL or parameters. */
function driverReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })?.cause
  if (cause && typeof cause.message === 'string') return `${String(cause.code ?? 'error')}: ${cause.message}`
  return error instanceof Error ? error.name : 'unknown error'
}
