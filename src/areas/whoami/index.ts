import { Elysia, t } from 'elysia'
import { ScopeName } from '../../access/scopes.ts'
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

/** GET /api/v0/whoami: the client context, for debugging a key's configuration. */
export function whoamiRoutes({ access }: AreaDeps) {
  return new Elysia({ name: 'area/whoami', prefix: '/api/v0' }).use(access).get(
    '/whoami',
    ({ access: { key, origin } }) => ({
      businessId: key.businessId,
      keyType: key.type,
      origin,
      allowedOrigins: [...key.allowedOrigins],
      keyId: key.id,
      scopes: [...key.scopeList],
      expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    }),
    {
      access: { scope: null, public: true },
      response: ClientContext,
      detail: { summary: 'The client context of the calling key', tags: ['keys'] },
    },
  )
}
