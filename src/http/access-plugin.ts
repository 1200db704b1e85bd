import { Elysia } from 'elysia'
import { readApiBody } from './request-body.ts'
import { stampApiAnswer } from './request-context.ts'
import { statusOf } from './status.ts'
import type { PeerSource } from '../shared/client-address.ts'
import { type AccessContext, type Gate, GateRequest } from '../access/gate.ts'
import type { RouteAccess } from '../access/scopes.ts'

export type { AccessContext } from '../access/gate.ts'

/** Where a granted request's AccessContext waits between the chain's hooks. */
const DECIDED = Symbol('access decided')

/** The id of the key a request was granted with, for the request log; undefined when none was. */
export function decidedKeyId(set: object): string | undefined {
  return (set as { [DECIDED]?: AccessContext })[DECIDED]?.key.id
}

/**
 * The `access` route option: `{ access: { scope: 'ANALYTICS_WRITE', public: true } }`,
 * running the gate (src/access/gate.ts) in Elysia's hooks. The hot routes run the same
 * gate without hooks (src/http/direct-route.ts).
 *
 * Elysia parses a body before `transform`, and validates before `resolve`, so the chain
 * runs in the earliest hook a route has: `parse` for requests with a body (refused before
 * the body is read), `transform` for the rest (refused before query validation). Only
 * once validation has passed does `resolve` hand the key to the handler; the use is
 * counted only for an answer in 2xx, so a refused request writes nothing, not even
 * `lastUsedAt`.
 *
 * Hooks destructure what they read: Elysia infers from a hook's parameters which parts
 * of the context to build, and a hook that takes the whole context makes it build all of
 * them (headers object, query) on every request, about 2 µs. The decision therefore
 * travels from hook to hook under a symbol on `set`, the one plain object Elysia keeps
 * per request (a WeakMap keyed by the request measured 0.3 µs slower under load).
 */
export function createAccessPlugin(gate: Gate) {
  type Stamped = Parameters<typeof stampApiAnswer>[0] & { [DECIDED]?: AccessContext }

  function check(request: Request, path: string, set: Stamped, server: PeerSource | null, rule: RouteAccess): void | Promise<void> {
    if (set[DECIDED] !== undefined) return
    const origin = request.headers.get('origin')
    // First, so refusals carry the request id and the Origin echo too.
    stampApiAnswer(set, origin)
    const access = gate.admit(new GateRequest(request, path, server, origin, set.headers), rule)
    if (access instanceof Promise) {
      return access.then((granted) => {
        set[DECIDED] = granted
      })
    }
    set[DECIDED] = access
  }

  return new Elysia({ name: 'access' }).macro({
    access: (rule: RouteAccess) => ({
      detail: accessDetail(rule),
      // readApiBody parses every body itself; Elysia's JSON parser is named after it so
      // the API reference shows the content type (Elysia's macro typing omits named
      // parsers, which its runtime takes).
      parse: [
        function screenRequest({
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
          const checked = check(request, path, set, server, rule)
          if (checked) return checked.then(() => admitBody(request, set, rule))
          return admitBody(request, set, rule)
        },
        'json',
      ] as unknown as (context: { request: Request; path: string; set: Stamped; server: PeerSource | null }) => undefined,
      transform({ request, path, set, server }) {
        return check(request, path, set, server, rule)
      },
      resolve({ set }) {
        return { access: (set as Stamped)[DECIDED]! }
      },
      // mapResponse sees every answer's final value, a handler's errors included.
      mapResponse({ set, responseValue }) {
        const access = (set as Stamped)[DECIDED]
        if (access === undefined) return
        gate.answered(access, rule, statusOf(responseValue, set.status), errorCodeOf(responseValue))
      },
    }),
  })
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

/** The route's admission check (if any), then the body; null when there is none. */
function admitBody(request: Request, set: { [DECIDED]?: AccessContext }, rule: RouteAccess) {
  rule.admit?.(set[DECIDED]!.key)
  // No body at all answers null, so the JSON parser named after this hook is not run on
  // nothing (it would refuse an empty body even where the route takes none).
  return readApiBody(request)
}
