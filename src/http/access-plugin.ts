import { Elysia } from 'elysia'
import type { Gate, Grant } from '../access/gate.ts'
import type { RouteAccess } from '../access/scopes.ts'
import type { ClientAddressOf, PeerSource } from '../shared/client-address.ts'
import { bodyLimitOf, readApiBody } from './request-body.ts'
import { stampApiAnswer } from './request-context.ts'
import { describeRequest } from './request-facts.ts'
import { statusOf } from './status.ts'

/** Where a request's grant waits between the chain's hooks. */
const GRANTED = Symbol('access granted')

type Stamped = Parameters<typeof stampApiAnswer>[0] & { [GRANTED]?: Grant }

/** The id of the key a request was granted with, for the request log; undefined when none was. */
export function grantedKeyId(set: object): string | undefined {
  return (set as Stamped)[GRANTED]?.key.id
}

/**
 * The `access` route option: `{ access: { scope: 'ANALYTICS_WRITE', public: true } }`,
 * running the gate (src/access/gate.ts) in Elysia's hooks. The hot routes run the same
 * gate without hooks (src/http/direct-route.ts).
 *
 * Elysia parses a body before `transform` and validates before `resolve`, so the chain runs
 * in the earliest hook a route has: `parse` for requests with a body (refused before the
 * body is read), `transform` for the rest (refused before query validation). Only once
 * validation has passed does `resolve` hand the grant to the handler; the use is counted
 * only for an answer in 2xx, so a refused request writes nothing, not even `lastUsedAt`.
 *
 * Hooks destructure what they read: Elysia builds only the parts of the context a hook's
 * parameters name. The grant travels from hook to hook under a symbol on `set`, the one
 * plain object Elysia keeps per request.
 */
export function createAccessPlugin(gate: Gate, clientAddressOf: ClientAddressOf) {
  async function check(request: Request, path: string, set: Stamped, server: PeerSource | null, rule: RouteAccess): Promise<void> {
    if (set[GRANTED] !== undefined) return
    const origin = request.headers.get('origin')
    // First, so refusals carry the request id and the Origin echo too.
    stampApiAnswer(set, origin)
    keep(set, await gate.check(describeRequest(request, path, server, origin, clientAddressOf), rule))
  }

  return new Elysia({ name: 'access' }).macro({
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
          set: Stamped
          server: PeerSource | null
        }) {
          await check(request, path, set, server, rule)
          // A route without room (a full write queue) refuses before reading what it could not take.
          rule.checkRoom?.(set[GRANTED]!.key.businessId)
          // No body at all answers null, so the JSON parser named after this hook is not run on
          // nothing (it would refuse an empty body even where the route takes none).
          return readApiBody(request, bodyLimitOf(set[GRANTED]!.key.type))
        },
        'json',
      ] as unknown as (context: { request: Request; path: string; set: Stamped; server: PeerSource | null }) => undefined,
      transform({ request, path, set, server }) {
        return check(request, path, set, server, rule)
      },
      resolve({ set }) {
        return { access: (set as Stamped)[GRANTED]! }
      },
      // mapResponse sees every answer's final value, a handler's errors included.
      mapResponse({ set, responseValue }) {
        const grant = (set as Stamped)[GRANTED]
        if (grant === undefined) return
        gate.count(grant, rule, statusOf(responseValue, set.status), errorCodeOf(responseValue))
      },
    }),
  })
}

/** Keeps the grant for the next hooks; a private key's RateLimit-* headers go on every answer. */
function keep(set: Stamped, grant: Grant): void {
  set[GRANTED] = grant
  if (grant.rateLimitHeaders !== null) Object.assign(set.headers, grant.rateLimitHeaders)
}

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
