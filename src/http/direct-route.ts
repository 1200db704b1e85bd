import type { TSchema } from '@sinclair/typebox'
import type { PeerSource } from '../shared/client-address.ts'
import { type AccessContext, type Gate, GateRequest } from '../access/gate.ts'
import { accessDetail } from './access-plugin.ts'
import type { RouteAccess } from '../access/scopes.ts'
import { errorBody } from '../errors.ts'
import type { Logger } from '../observability/log.ts'
import { explainFailure } from './errors.ts'
import { parseJsonBody } from './json-body.ts'
import { readApiText } from './request-body.ts'
import { apiSuccessHeaders, nextRequestId, stampApiAnswer } from './request-context.ts'
import { createTurnEnd } from './turn-end.ts'

/** A direct route's success: its status and JSON body, as a value or already serialized. */
export type DirectAnswer = { status: number; body: unknown } | { status: number; json: string }

/** What a direct route's handler gets: the granted caller and, for routes that take one, the parsed body. */
export type DirectHandler = (access: AccessContext, body: unknown, request: Request) => DirectAnswer | Promise<DirectAnswer>

export interface DirectRouteSpec {
  method: 'GET' | 'POST'
  /** The full path, as declared (it is also the metrics label). */
  path: string
  access: RouteAccess
  /**
   * The body's schema, for the reference: the body is read after the key checks and
   * `access.admit`, as the `access` macro does, and the handler checks it. null: no body.
   */
  body: TSchema | null
}

/** A declared direct route; `handler` may be wrapped (test/support/witness.ts watches it). */
export interface DirectRoute {
  readonly spec: DirectRouteSpec
  handler: DirectHandler
}

/** Told of every answered direct request (metrics, the request log), as src/http/observation.ts is of the rest. */
export type AnswerObserver = (
  request: Request,
  route: string,
  status: number,
  startedAt: number,
  requestId: string,
  keyId: string | undefined,
) => void

export interface DirectRouteDeps {
  gate: Gate
  logger: Logger
  observe: AnswerObserver
  /** The listening server (the TCP peer for budgets); null under `app.handle`. */
  server: () => PeerSource | null
}

/**
 * Per request: what the answer needs whatever path it takes, and the request as the gate
 * reads it, in one object. The gate's `headers` (a private key's RateLimit-* headers)
 * stay null for public keys.
 */
class Exchange extends GateRequest {
  access: AccessContext | undefined = undefined
  readonly requestId = nextRequestId()

  constructor(
    request: Request,
    path: string,
    server: PeerSource | null,
    origin: string | null,
    /** When the request arrived (performance.now). */
    readonly startedAt: number,
  ) {
    super(request, path, server, origin, null)
  }
}

/**
 * An /api/v0 route answered by one function instead of Elysia's hook pipeline, for the
 * hot public routes (page views, whoami). Each Elysia hook, the context it builds and the
 * answer mapping cost microseconds per request, which at these routes' rates is most of
 * the service's CPU (bench/README.md, issue 11). It runs the same gate as the `access`
 * macro (src/access/gate.ts), the same body reading, the same failure answers
 * (src/http/errors.ts) and the same observation, in the same order: key checks and
 * budgets, the route's `admit`, the body, the handler; usage counted under the final
 * status. The route is still declared in Elysia (its area, mounted by `hotAreas`), so the
 * route table, the reference and `app.handle` see it, and tests run against this code.
 */
export function directRoute(
  deps: DirectRouteDeps,
  route: DirectRoute,
): (request: Request, startedAt?: number) => Response | Promise<Response> {
  const { gate, logger, observe } = deps
  const { spec } = route
  const rule = spec.access

  function finish(exchange: Exchange, status: number, errorCode: string | undefined): void {
    if (exchange.access !== undefined) gate.answered(exchange.access, rule, status, errorCode)
    observe(exchange.request, spec.path, status, exchange.startedAt, exchange.requestId, exchange.access?.key.id)
  }

  function respond(exchange: Exchange, answer: DirectAnswer): Response {
    const json = 'json' in answer ? answer.json : JSON.stringify(answer.body)
    const response = new Response(json, { status: answer.status, headers: apiSuccessHeaders(exchange.origin) })
    const headers = response.headers
    headers.set('x-request-id', exchange.requestId)
    const extra = exchange.headers
    if (extra !== null) for (const name in extra) headers.set(name, String(extra[name]))
    finish(exchange, answer.status, undefined)
    return response
  }

  function fail(exchange: Exchange, error: unknown): Response {
    const { request, requestId } = exchange
    const headers: Record<string, string> = { 'x-request-id': requestId }
    const extra = exchange.headers
    if (extra !== null) for (const name in extra) headers[name] = String(extra[name])
    stampApiAnswer({ headers }, exchange.origin)
    const failure = explainFailure(logger, error, { method: request.method, path: spec.path, route: spec.path, requestId })
    if (failure.headers) Object.assign(headers, failure.headers)
    headers['content-type'] = 'application/json'
    const response = new Response(JSON.stringify(errorBody(failure.code, failure.message, requestId)), {
      status: failure.status,
      headers,
    })
    finish(exchange, failure.status, failure.code)
    return response
  }

  /**
   * The body's route after the checks: one async frame awaiting the body's text and the
   * handler's answer, parsing the text in between (a `then` returning a promise costs two
   * more hops, and a parse in the text's own callback one more).
   */
  async function runWithBody(exchange: Exchange, access: AccessContext, text: Promise<string>): Promise<Response> {
    try {
      const answer = route.handler(access, parseJsonBody(await text), exchange.request)
      return respond(exchange, answer instanceof Promise ? await answer : answer)
    } catch (error) {
      return fail(exchange, error)
    }
  }

  function run(exchange: Exchange, access: AccessContext): Response | Promise<Response> {
    exchange.access = access
    try {
      let answer: DirectAnswer | Promise<DirectAnswer>
      if (spec.body !== null) {
        rule.admit?.(access.key)
        const text = readApiText(exchange.request)
        if (text !== null) return runWithBody(exchange, access, text)
        answer = route.handler(access, null, exchange.request)
      } else answer = route.handler(access, null, exchange.request)
      if (answer instanceof Promise) {
        return answer.then(
          (settled) => respond(exchange, settled),
          (error: unknown) => fail(exchange, error),
        )
      }
      return respond(exchange, answer)
    } catch (error) {
      return fail(exchange, error)
    }
  }

  /** `startedAt`: when the request arrived (performance.now), which its duration in the metrics counts from. */
  return function answerDirectly(request: Request, startedAt = performance.now()): Response | Promise<Response> {
    const exchange = new Exchange(request, spec.path, deps.server(), request.headers.get('origin'), startedAt)
    try {
      const admitted = gate.admit(exchange, rule)
      if (admitted instanceof Promise) {
        return admitted.then(
          (access) => run(exchange, access),
          (error: unknown) => fail(exchange, error),
        )
      }
      return run(exchange, admitted)
    } catch (error) {
      return fail(exchange, error)
    }
  }
}

/**
 * The direct routes of one app: each answer function for its Elysia route, and the list,
 * so tests can find every route and body the hooks do not show.
 */
export function createDirectRoutes(deps: DirectRouteDeps) {
  // Requests without a body are handled at the turn's end, all of the turn's together
  // (./turn-end.ts); page views answer once their events are committed.
  const atTurnEnd = createTurnEnd()
  const routes: DirectRoute[] = []
  const served: Record<string, Record<string, (request: Request) => Promise<Response>>> = {}
  return {
    routes: routes as readonly DirectRoute[],
    /**
     * For Bun.serve's `routes` (the app's `serve` option): the listening server calls each
     * answer function itself, without Elysia's per-request context (about 0.5 µs). Under
     * `app.handle` the Elysia route calls the same function.
     */
    served: served as Readonly<typeof served>,
    /** The answer function to declare as the Elysia route's handler. */
    answer(spec: DirectRouteSpec, handler: DirectHandler): (request: Request) => Promise<Response> {
      const route: DirectRoute = { spec, handler }
      routes.push(route)
      const answerNow = directRoute(deps, route)
      const answer =
        spec.body === null
          ? // Handled at the turn's end rather than on arrival: the turn's requests then run
            // the same code one after another, and whoami cost 0.6 µs less CPU than when
            // its answer was built on arrival and held (bench/README.md, "The change:
            // requests handled at the turn's end"). Its duration still counts from arrival.
            async (request: Request) => {
              const arrivedAt = performance.now()
              await atTurnEnd(null)
              return answerNow(request, arrivedAt)
            }
          : // A body's route starts on arrival: handled at the turn's end, a page view cost
            // 0.6 µs less CPU with its events stored nowhere, but its write then waited a
            // turn more for the group commit, and single events on PostgreSQL measured 7%
            // fewer a second in two runs.
            (request: Request) => {
              const answered = answerNow(request)
              return answered instanceof Promise ? answered : atTurnEnd(answered)
            }
      served[spec.path] = { ...served[spec.path], [spec.method]: answer }
      return answer
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
