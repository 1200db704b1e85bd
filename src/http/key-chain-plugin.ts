import { Elysia, ElysiaCustomStatusResponse } from 'elysia'
import type { Gate, Grant } from '../access/gate.ts'
import type { RouteAccess } from '../access/scopes.ts'
import type { ClientAddressOf, PeerSource } from '../shared/client-address.ts'
import { answerApi } from './api-answer.ts'
import { bodyLimitOf, readApiBody } from './request-body.ts'
import { createRequestContext, type HeaderSet, type RequestContext } from './request-context.ts'
import { describeRequest } from './request-facts.ts'
import { statusOf } from './status.ts'

/**
 * The key chain as an Elysia plugin: the `access` route option (`{ access: { scope:
 * 'ANALYTICS_WRITE', public: true } }`, the route's rule) runs the gate (src/access/gate.ts)
 * in the route's hooks and hands the handler its `grant`; the answer is made by
 * `answerApi` (./api-answer.ts), as for the direct routes (./direct-route.ts).
 *
 * Elysia parses a body before `transform` and validates before `resolve`, so the gate runs
 * in the earliest hook a route has: `parse` for requests with a body (refused before the
 * body is read), `transform` for the rest (refused before query validation). Only once
 * validation has passed does `resolve` hand the grant to the handler. `mapResponse` sees
 * every answer's final value, the global error handler's envelope included
 * (./errors.ts), and turns it into the answer.
 *
 * The grant waits between the hooks in a map keyed by the request (each app its own), not
 * on Elysia's context: the hooks before `resolve` cannot add to it. Hooks destructure what
 * they read: Elysia builds only the parts of the context a hook's parameters name.
 */
export function createKeyChainPlugin(
  gate: Gate,
  clientAddressOf: ClientAddressOf,
  requestContext: RequestContext = createRequestContext(),
) {
  const grants = new WeakMap<Request, Grant>()

  async function check(request: Request, path: string, set: HeaderSet, server: PeerSource | null, rule: RouteAccess): Promise<Grant> {
    const known = grants.get(request)
    if (known !== undefined) return known
    const origin = request.headers.get('origin')
    // First, so refusals carry the request id and the Origin echo too.
    requestContext.stampApiAnswer(set, origin)
    const grant = await gate.check(describeRequest(request, path, server, origin, clientAddressOf), rule)
    grants.set(request, grant)
    return grant
  }

  const plugin = new Elysia({ name: 'key-chain' }).macro({
    access: (rule: RouteAccess) => ({
      detail: accessDetail(rule),
      // readApiBody parses every body itself; Elysia's JSON parser is named after it so
      // the API reference shows the content type (Elysia's macro typing omits named
      // parsers, which its runtime takes).
      parse: [
        async function screenRequest({
          request,
          path,
          set,
          server,
        }: {
          request: Request
          path: string
          set: HeaderSet
          server: PeerSource | null
        }) {
          const grant = await check(request, path, set, server, rule)
          // A route without room (a full write queue) refuses before reading what it could not take.
          rule.checkRoom?.(grant.key.businessId)
          // No body at all answers null, so the JSON parser named after this hook is not run on
          // nothing (it would refuse an empty body even where the route takes none).
          return readApiBody(request, bodyLimitOf(grant.key.type))
        },
        'json',
      ] as unknown as (context: { request: Request; path: string; set: HeaderSet; server: PeerSource | null }) => undefined,
      async transform({ request, path, set, server }) {
        await check(request, path, set, server, rule)
      },
      resolve({ request }) {
        return { grant: grants.get(request)! }
      },
      mapResponse({ request, set, responseValue }) {
        const grant = grants.get(request)
        // A refusal of the chain: the gate counted it, the error handler made its answer.
        if (grant === undefined) return
        if (responseValue instanceof Response) return void gate.count(grant, rule, responseValue.status, undefined)
        const custom = responseValue instanceof ElysiaCustomStatusResponse
        const body = custom ? responseValue.response : responseValue
        return answerApi(gate, rule, grant, {
          status: statusOf(responseValue, set.status),
          body,
          headers: set.headers as Record<string, string>,
          errorCode: errorCodeOf(body),
        })
      },
    }),
  })

  return {
    plugin,
    /** The key a request was granted with, for the request log; undefined when none was. */
    keyIdOf: (request: Request): string | undefined => grants.get(request)?.key.id,
  }
}

export type KeyChainPlugin = ReturnType<typeof createKeyChainPlugin>['plugin']

/**
 * What a route's access rule puts in its OpenAPI entry, so the reference shows the
 * endpoint-to-scope table, and tests can enumerate it from `app.routes`.
 */
export function accessDetail(rule: RouteAccess, more?: string): Record<string, unknown> {
  const description = `Scope: ${rule.scope ?? 'none (any valid key)'}. Public keys: ${rule.public ? 'allowed' : 'refused'}.`
  return { 'x-access': rule, security: [{ apiKey: [] }], description: more ? `${description} ${more}` : description }
}

/** The `error.code` of an error answer (src/http/errors.ts renders them as objects). */
function errorCodeOf(value: unknown): string | undefined {
  const code = (value as { error?: { code?: unknown } } | null)?.error?.code
  return typeof code === 'string' ? code : undefined
}
