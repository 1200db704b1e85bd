import type { TSchema } from '@sinclair/typebox'
import type { Gate, Grant } from '../access/gate.ts'
import type { RouteAccess } from '../access/scopes.ts'
import { errorBody } from '../errors.ts'
import type { Logger } from '../observability/log.ts'
import type { ClientAddressOf, PeerSource } from '../shared/client-address.ts'
import { accessDetail } from './key-chain-plugin.ts'
import { explainFailure } from './errors.ts'
import { CauseLog } from '../observability/cause-log.ts'
import { describeRequest } from './request-facts.ts'
import { parseJsonBody } from './json-body.ts'
import { bodyLimitOf, readApiText } from './request-body.ts'
import { answerApi } from './api-answer.ts'
import type { RequestContext } from './request-context.ts'
import { createTurnEnd } from './turn-end.ts'

/** A direct route's success: its status and the JSON body to send. */
export interface DirectReply {
  readonly status: number
  readonly body: unknown
}

/** What a direct route's handler gets: the granted caller, the parsed body (null for routes without one) and the request. */
export type DirectHandler = (grant: Grant, body: unknown, request: Request) => DirectReply | Promise<DirectReply>

export interface DirectRouteSpec {
  method: 'GET' | 'POST'
  /** The full path, as declared (it is also the metrics label). */
  path: string
  access: RouteAccess
  /** The body's schema, for the reference (the handler checks it); null: the route takes no body. */
  body: TSchema | null
}

/** A declared direct route; `handler` may be wrapped (test/support/witness.ts watches it). */
export interface DirectRoute {
  readonly spec: DirectRouteSpec
  handler: DirectHandler
}

/** Told of every direct request once answered (metrics, the request log), as src/http/observation.ts is of the rest. */
export type RequestObserver = (
  request: Request,
  route: string,
  status: number,
  arrivedAt: number,
  requestId: string,
  keyId: string | undefined,
  server: PeerSource | null,
) => void

export interface DirectRouteDeps {
  gate: Gate
  requestContext: RequestContext
  logger: Logger
  observe: RequestObserver
  clientAddressOf: ClientAddressOf
}

/** A direct route's function: the request, and the listening server (the TCP peer for budgets; null under `app.handle`). */
export type DirectAnswer = (request: Request, server: PeerSource | null) => Promise<Response>

/**
 * An /api/v0 route answered by one function instead of Elysia's hook pipeline, for the hot
 * public routes (page views, whoami), whose rates make each hook's cost visible
 * (docs/architecture.md, "The hot routes"). The same steps as the key chain's plugin
 * (./key-chain-plugin.ts), in the same order: the gate, the route's room check, the body, the
 * handler; and the same function makes the answer (./api-answer.ts).
 */
export function directRoute(
  deps: DirectRouteDeps,
  route: DirectRoute,
): (request: Request, server: PeerSource | null, arrivedAt?: number) => Promise<Response> {
  const { gate, observe, clientAddressOf, requestContext } = deps
  const failureLog = new CauseLog(deps.logger)
  const { spec } = route
  const rule = spec.access

  return async function answerDirectly(request, server, arrivedAt = performance.now()) {
    const requestId = requestContext.nextRequestId()
    const origin = request.headers.get('origin')
    let grant: Grant | undefined
    let response: Response
    try {
      grant = await gate.check(describeRequest(request, spec.path, server, origin, clientAddressOf), rule)
      let body: unknown = null
      if (spec.body !== null) {
        // A route without room (a full write queue) refuses before reading what it could not
        // take, and again before parsing it: the room may have gone while the body came.
        rule.checkRoom?.(grant.key.businessId)
        const text = await readApiText(request, bodyLimitOf(grant.key.type))
        if (text !== null) {
          rule.checkRoom?.(grant.key.businessId)
          body = parseJsonBody(text)
        }
      }
      const reply = await route.handler(grant, body, request)
      // A success's headers come from a template per Origin (./request-context.ts); its own request id goes on its copy.
      response = answerApi(gate, rule, grant, { status: reply.status, body: reply.body, headers: requestContext.apiSuccessHeaders(origin) })
      response.headers.set('x-request-id', requestId)
    } catch (error) {
      const failure = explainFailure(failureLog, error, { method: request.method, path: spec.path, route: spec.path, requestId })
      const headers: Record<string, string> = { 'x-request-id': requestId }
      requestContext.stampApiAnswer({ headers }, origin)
      Object.assign(headers, failure.headers)
      response = answerApi(gate, rule, grant, {
        status: failure.status,
        body: errorBody(failure.code, failure.message, requestId, failure.field),
        headers,
        errorCode: failure.code,
      })
    }
    observe(request, spec.path, response.status, arrivedAt, requestId, grant?.key.id, server)
    return response
  }
}

/**
 * The direct routes of one app: each route's function for its Elysia route, and the list,
 * so tests can find every route and body the hooks do not show.
 */
export function createDirectRoutes(deps: DirectRouteDeps) {
  const atTurnEnd = createTurnEnd()
  const routes: DirectRoute[] = []
  const served: Record<string, Record<string, DirectAnswer>> = {}
  return {
    routes: routes as readonly DirectRoute[],
    /**
     * For Bun.serve's `routes` (the app's `serve` option): the listening server calls each
     * route's function itself, without Elysia's per-request context. Under `app.handle` the
     * Elysia route calls the same function.
     */
    served: served as Readonly<typeof served>,
    /** Declares a direct route; answers the function to give the Elysia route as its handler. */
    route(spec: DirectRouteSpec, handler: DirectHandler): DirectAnswer {
      const route: DirectRoute = { spec, handler }
      routes.push(route)
      const answerDirectly = directRoute(deps, route)
      // A route without a body is handled at the turn's end, with the turn's other requests
      // (./turn-end.ts); its duration still counts from arrival. A body's route starts at once:
      // its write then joins the group commit a turn sooner.
      const handle =
        spec.body === null
          ? async (request: Request, server: PeerSource | null) => {
              const arrivedAt = performance.now()
              await atTurnEnd()
              return answerDirectly(request, server, arrivedAt)
            }
          : (request: Request, server: PeerSource | null) => answerDirectly(request, server)
      served[spec.path] = { ...served[spec.path], [spec.method]: handle }
      return handle
    },
  }
}

export type DirectRoutes = ReturnType<typeof createDirectRoutes>

/**
 * The Elysia route options of a direct route: its access rule and body in the reference,
 * and no hooks. The body is declared in `detail` rather than as the route's `body`:
 * Elysia would then parse and check it itself, before the key checks.
 */
export function directRouteDetail(spec: DirectRouteSpec, detail: { summary: string; description?: string; tags: string[] }) {
  const { description, ...rest } = detail
  return {
    ...accessDetail(spec.access, description),
    ...rest,
    ...(spec.body === null ? {} : { requestBody: { required: true, content: { 'application/json': { schema: spec.body } } } }),
  }
}
