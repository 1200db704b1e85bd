import { Elysia } from 'elysia'
import { statusOf } from './status.ts'
import type { Server } from 'elysia/universal/server'
import type { AdminGuard } from './admin-guard.ts'
import type { ClientAddressOf } from '../shared/client-address.ts'
import { grantedKeyId } from './access-plugin.ts'
import type { Logger } from '../observability/log.ts'
import { methodLabel, UNMATCHED_ROUTE, type Metrics } from '../observability/metrics.ts'

/** When a request arrived, under a symbol on `set` (the one plain object Elysia keeps per request). */
const STARTED = Symbol('request started')
type Timed = { [STARTED]?: number; status?: number | string; headers: Record<string, unknown> }

/**
 * Counts every answer in the metrics and, with `logRequests`, writes one line per request:
 * method, route as declared, status, duration, key id, client address, request id. Never
 * the raw path or its query string (a key pasted into a URL stays out of the log), never a
 * header or a body.
 *
 * Two global hooks: onRequest reads the clock, mapResponse (which Elysia runs for every
 * answer, errors and unknown paths included, once its value is final) counts and logs.
 * Not onAfterResponse, which Elysia schedules with a setImmediate per request
 * (bench/README.md, "Request observation in two hooks").
 */
export function requestObservation(deps: {
  metrics: Metrics
  logger: Logger
  logRequests: boolean
  /** The TRUST_PROXY rule the limiter counts by, so the log and the budgets agree. */
  clientAddress: ClientAddressOf
}) {
  const { metrics, logger, logRequests, clientAddress } = deps
  // Labels come only from declared routes: whatever path a client sends, the label set stays bounded.
  let declared: ReadonlySet<string> = new Set()
  // The app's own server, read only for a log line: Elysia builds `server` into a hook's
  // context only when the hook names it.
  let server: () => Server | null = () => null

  /** Counts one answered request and, with `logRequests`, logs it. */
  function record(
    request: Request,
    route: string,
    status: number,
    startedAt: number,
    requestId: string | undefined,
    keyId: string | undefined,
  ) {
    const seconds = (performance.now() - startedAt) / 1000
    metrics.recordRequest(request.method, route, status, seconds)
    if (logRequests) {
      logger.info('request', {
        requestId,
        method: methodLabel(request.method),
        route,
        status,
        durationMs: Math.round(seconds * 1e6) / 1e3,
        keyId,
        client: clientAddress(request, server()),
      })
    }
  }

  const plugin = new Elysia({ name: 'observability' })
    .onRequest(function startClock({ set }) {
      ;(set as Timed)[STARTED] = performance.now()
    })
    .mapResponse({ as: 'global' }, function observe({ request, route, set, responseValue }) {
      const timed = set as Timed
      const label = route !== undefined && declared.has(route) ? route : UNMATCHED_ROUTE
      const status = statusOf(responseValue, timed.status)
      record(
        request,
        label,
        status,
        timed[STARTED] ?? performance.now(),
        timed.headers['x-request-id'] as string | undefined,
        grantedKeyId(set),
      )
      // Elysia 1.4 drops the body of a NOT_FOUND answer when a global mapResponse returns
      // nothing; handing the value back keeps the error envelope (test/api/http.test.ts).
      if (route === undefined) return responseValue as Response | undefined
    })

  return {
    plugin,
    /** For routes answered outside the hooks (src/http/direct-route.ts): `route` as declared. */
    record,
    /** Called once the app is built, with its final route list. */
    declareRoutes(routes: readonly { path: string }[]) {
      declared = new Set(routes.map((route) => route.path))
    },
    /** The server the app listens with, once it does (for the client address). */
    readServer(read: () => Server | null) {
      server = read
    },
  }
}

/** `GET /metrics`: Prometheus text exposition, for the operator (admin token). */
export function metricsRoute(deps: { metrics: Metrics; requireAdmin: AdminGuard }) {
  const { requireAdmin } = deps
  return new Elysia({ name: 'metrics' }).get(
    '/metrics',
    function scrape({ set }) {
      set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
      return deps.metrics.render()
    },
    {
      beforeHandle: requireAdmin,
      detail: {
        summary: 'Prometheus metrics (admin token)',
        tags: ['operations'],
        security: [{ adminToken: [] }],
        responses: { 200: { description: 'Prometheus text exposition', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
  )
}
