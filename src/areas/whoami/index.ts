import { Elysia, t } from 'elysia'
import type { ActiveKey } from '../../access/key-store.ts'
import { type RouteAccess, ScopeName } from '../../access/scopes.ts'
import { type DirectAnswer, directRouteDetail, type DirectRouteSpec } from '../../http/direct-route.ts'
import type { AreaDeps } from '../deps.ts'

const ClientContext = t.Object({
  businessId: t.String(),
  keyType: t.Union([t.Literal('public'), t.Literal('private')]),
  origin: t.Nullable(t.String({ description: 'The Origin header seen on this request' })),
  allowedOrigins: t.Array(t.String(), { description: "The key's allowed origins; [] for private keys" }),
  keyId: t.String(),
  scopes: t.Array(ScopeName),
  expiresAt: t.Nullable(t.String()),
})

const ANY_KEY: RouteAccess = { scope: null, public: true }
const WHOAMI: DirectRouteSpec = { method: 'GET', path: '/api/v0/whoami', access: ANY_KEY, body: null }

/** Origins remembered per key: a key used from more pages than this starts over. */
const MAX_ORIGINS_PER_KEY = 16

/**
 * GET /api/v0/whoami: the client context, for debugging a key's configuration. Pages call
 * it to check their key, so it is a direct route (src/http/direct-route.ts), and its
 * answer, which depends only on the key and the Origin, is built and serialized once per pair. A
 * key's cache entry is replaced when the key changes, so the memo never outlives it.
 */
export function whoamiRoutes({ direct }: AreaDeps) {
  // The whole answer is kept, not only its text: one object less a request.
  const serialized = new WeakMap<ActiveKey, Map<string | null, DirectAnswer>>()
  const answer = direct.answer(WHOAMI, ({ key, origin }) => {
    let byOrigin = serialized.get(key)
    if (byOrigin === undefined) serialized.set(key, (byOrigin = new Map()))
    let answered = byOrigin.get(origin)
    if (answered === undefined) {
      if (byOrigin.size >= MAX_ORIGINS_PER_KEY) byOrigin.clear()
      answered = Object.freeze({ status: 200, json: JSON.stringify(clientContext(key, origin)) })
      byOrigin.set(origin, answered)
    }
    return answered
  })
  return new Elysia({ name: 'area/whoami' }).get(WHOAMI.path, ({ request }) => answer(request), {
    response: ClientContext,
    detail: directRouteDetail(WHOAMI, { summary: 'The client context of the calling key', tags: ['keys'] }),
  })
}

function clientContext(key: ActiveKey, origin: string | null): typeof ClientContext.static {
  return {
    businessId: key.businessId,
    keyType: key.type,
    origin,
    allowedOrigins: [...key.allowedOrigins],
    keyId: key.id,
    scopes: [...key.scopeList],
    expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
  }
}
