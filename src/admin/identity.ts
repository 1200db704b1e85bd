import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { rollIdentitySecret } from '../identity/secret.ts'
import { requireBusiness } from './businesses.ts'
import { IdParams } from './model.ts'

/** The identity secret is set (or replaced) here and shown only in this answer. */
export function identityRoutes({ db }: { db: Db }) {
  return new Elysia({ name: 'admin/identity' }).post(
    '/businesses/:id/identity-secret',
    async ({ params, set }) => {
      await requireBusiness(db, params.id)
      const secret = await rollIdentitySecret(db, params.id)
      set.status = 201
      return { secret }
    },
    {
      params: IdParams,
      response: {
        201: t.Object({
          secret: t.String({
            description:
              "Shown once. Keep it on the business's servers: they sign each person's externalId (or lower-cased email) with it, as identityHash.",
          }),
        }),
      },
      detail: {
        summary: "Set a business's identity secret, replacing any earlier one",
        description:
          'Public-key people writes with a valid identityHash may then update stored people; list removals by public keys then need one.',
      },
    },
  )
}
