import { Elysia, t } from 'elysia'
import type { ActiveKey } from '../../access/key-store.ts'
import { type RouteAccess, ScopeName } from '../../access/scopes.ts'
import { directRouteDetail, type DirectRouteSpec } from '../../http/direct-route.ts'
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

/**
 * GET /api/v0/whoami: the client context, for debugging a key's configuration. Pages call
 * it to check their key, so it is a direct route (src/http/direct-route.ts).
 */
export function whoamiRoutes({ direct }: AreaDeps) {
  const handle = direct.route(WHOAMI, ({ key, origin }) => ({ status: 200, body: clientContext(key, origin) }))
  return new Elysia({ name: 'area/whoami' }).get(WHOAMI.path, ({ request, server }) => handle(request, server), {
    response: ClientContext,
    detail: directRouteDetail(WHOAMI, { summary: 'The client context of the calling key', tags: ['keys'] }),
  })
}

export function clientContext(key: ActiveKey, origin: string | null): typeof ClientContext.static {
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
