import type { Gate, Grant } from '../access/gate.ts'
import type { RouteAccess } from '../access/scopes.ts'

/** What an /api/v0 route came to, before it is sent. */
export interface ApiReply {
  readonly status: number
  /** The route's reply or the error envelope (src/errors.ts); undefined, or any body of a 204: none. */
  readonly body: unknown
  /**
   * The answer's headers so far: the request id and the Origin echo (./request-context.ts),
   * and a failure's own (Retry-After, WWW-Authenticate, Allow).
   */
  readonly headers: HeadersInit
  /** The error envelope's code, for a failure. */
  readonly errorCode?: string
}

/**
 * The one place an /api/v0 route's reply or refusal becomes its HTTP answer, for the Elysia
 * routes (./key-chain-plugin.ts) and the direct ones (./direct-route.ts) alike: the body as
 * JSON with the headers so far, a private key's RateLimit-* headers on every answer (a
 * failure's own Retry-After wins), and the granted key's use counted under the final status
 * (only a 2xx is a use; a refusal of the chain was counted by the gate).
 */
export function answerApi(gate: Gate, rule: RouteAccess, grant: Grant | undefined, reply: ApiReply): Response {
  const empty = reply.body === undefined || reply.status === 204
  const response = new Response(empty ? null : JSON.stringify(reply.body), { status: reply.status, headers: reply.headers })
  if (!empty && !response.headers.has('content-type')) response.headers.set('content-type', 'application/json')
  if (grant !== undefined) {
    const limits = grant.rateLimitHeaders
    if (limits !== null) for (const name in limits) if (!response.headers.has(name)) response.headers.set(name, limits[name]!)
    gate.count(grant, rule, reply.status, reply.errorCode)
  }
  return response
}
