import { Elysia } from 'elysia'
import type { Server } from 'elysia/universal/server'
import { createAdminGuard } from '../admin/auth.ts'
import { decidedKeyId } from '../access/plugin.ts'
import { clientAddress } from './client-address.ts'
import type { Logger } from './log.ts'
import { UNMATCHED_ROUTE, type Metrics } from './metrics.ts'

/** When a request arrived, under a symbol on `set` (the one plain object Elysia keeps per request). */
const STARTED = Symbol('request started')

type Timed = { [STARTED]?: number; status?: number | string; headers: Record<string, unknown> }

/**
 * Counts every answer in the metrics and, with `logRequests`, writes one line per request:
 * method, route as declared, status, duration, key id, client address, request id. Never
 * the raw path or its query string (a key pasted into a URL stays out of the log), never a
 * header or a body.
 *
 * Two global hooks: onRequest reads the clock, onAfterResponse (after the answer is on its
 * way) counts and logs. Their cost per request is recorded in bench/README.md.
 */
export function requestObservation(deps: { metrics: Metrics; logger: Logger; logRequests: boolean }) {
  const { metrics, logger, logRequests } = deps
  // Labels come only from declared routes: whatever path a client sends, the label set stays bounded.
  let declared: ReadonlySet<string> = new Set()
  // Elysia leaves `server` out of onAfterResponse's context; the app's own is read instead.
  let server: () => Server | null = () => null

  const plugin = new Elysia({ name: 'observability' })
    .onRequest(function startClock({ set }) {
      ;(set as Timed)[STARTED] = performance.now()
    })
    .onAfterResponse({ as: 'global' }, function observe({ request, route, set }) {
      const timed = set as Timed
      const seconds = (performance.now() - (timed[STARTED] ?? performance.now())) / 1000
      const status = typeof timed.status === 'number' ? timed.status : 200
      const label = route !== undefined && declared.has(route) ? route : UNMATCHED_ROUTE
      metrics.recordRequest(request.method, label, status, seconds)
      if (logRequests) {
        logger.info('request', {
          requestId: timed.headers['x-request-id'] as string | undefined,
          method: request.method,
          route: label,
          status,
          durationMs: Math.round(seconds * 1e6) / 1e3,
          keyId: decidedKeyId(set),
          client: clientAddress(request, server()),
        })
      }
    })

  return {
    plugin,
    /** Called once the app is built: its final route list, and its server once listening. */
    attach(app: { routes: readonly { path: string }[]; server: Server | null }) {
      declared = new Set(app.routes.map((route) => route.path))
      server = () => app.server
    },
  }
}

/** `GET /metrics`: Prometheus text exposition, for the operator (admin token). */
export function metricsRoute(deps: { metrics: Metrics; adminToken: string }) {
  const requireAdmin = createAdminGuard(deps.adminToken)
  return new Elysia({ name: 'metrics' }).get(
    '/metrics',
    function scrape({ set }) {
      set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
      return deps.metrics.render()
    },
    {
      beforeHandle: requireAdmin,
      detail: { summary: 'Prometheus metrics (admin token)', tags: ['operations'] },
    },
  )
}
