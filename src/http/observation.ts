import { Elysia } from 'elysia'
import { statusOf } from './status.ts'
import type { AdminGuard } from './admin-guard.ts'
import type { ClientAddressOf, PeerSource } from '../shared/client-address.ts'
import type { Logger } from '../observability/log.ts'
import { methodLabel, UNMATCHED_ROUTE, type Metrics } from '../observability/metrics.ts'

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
  /** The key a request was granted with (src/http/key-chain-plugin.ts). */
  keyIdOf: (request: Request) => string | undefined
}) {
  const { metrics, logger, logRequests, clientAddress, keyIdOf } = deps
  // When each request arrived: keyed by the request, nothing added to Elysia's context.
  const started = new WeakMap<Request, number>()

  /** Counts one answered request and, with `logRequests`, logs it. */
  function record(
    request: Request,
    route: string,
    status: number,
    startedAt: number,
    requestId: string | undefined,
    keyId: string | undefined,
    server: PeerSource | null,
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
        client: clientAddress(request, server),
      })
    }
  }

  /** Elysia names a route only when one matched: the label set stays bounded whatever path a client sends. */
  function recordAnswer(
    request: Request,
    route: string | undefined,
    status: number,
    server: PeerSource | null,
    headers: Record<string, unknown>,
  ) {
    record(
      request,
      route ?? UNMATCHED_ROUTE,
      status,
      started.get(request) ?? performance.now(),
      headers['x-request-id'] as string | undefined,
      keyIdOf(request),
      server,
    )
  }

  // Elysia builds `server` into a hook's context only when the hook names it: only the
  // request log (the client's address) asks for it.
  const plugin = new Elysia({ name: 'observability' })
    .onRequest(function startClock({ request }) {
      started.set(request, performance.now())
    })
    .mapResponse(
      { as: 'global' },
      logRequests
        ? function observeWithPeer({ request, route, set, server, responseValue }) {
            recordAnswer(request, route, statusOf(responseValue, set.status), server, set.headers)
            // Elysia 1.4 drops the body of a NOT_FOUND answer when a global mapResponse returns
            // nothing; handing the value back keeps the error envelope (test/api/http.test.ts).
            if (route === undefined) return responseValue as Response | undefined
          }
        : function observe({ request, route, set, responseValue }) {
            recordAnswer(request, route, statusOf(responseValue, set.status), null, set.headers)
            if (route === undefined) return responseValue as Response | undefined
          },
    )

  return {
    plugin,
    /** For routes answered outside the hooks (src/http/direct-route.ts): `route` as declared. */
    record,
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
