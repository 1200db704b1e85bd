import { Elysia } from 'elysia'
import type { Db } from '../../db/client.ts'
import { identitySecretOf, rollIdentitySecret } from '../identity/secret.ts'
import { businessPage } from './business-views.ts'
import { NO_SUCH_PAGE, renderFailures } from './failures.ts'
import { TokenOnlyForm } from './forms.ts'
import { htmlPage } from './http.ts'
import type { memberMacro } from './member.ts'

/** Business settings: the identity secret (contract section 12), set or rotated by owners only. */
export function businessPlugin(deps: { db: Db; member: ReturnType<typeof memberMacro> }) {
  const { db } = deps
  return new Elysia({ name: 'dashboard/business' })
    .use(deps.member)
    .onError(renderFailures(NO_SUCH_PAGE))
    .get(
      '/settings/business',
      async ({ member }) => htmlPage(200, businessPage(member, { hasSecret: (await identitySecretOf(db, member.businessId)) !== null })),
      { member: 'page' },
    )
    .post(
      '/settings/business/identity-secret',
      async ({ member }) => {
        const secret = await rollIdentitySecret(db, member.businessId)
        // Rendered, not redirected: the secret exists in this answer only (no-store).
        return htmlPage(201, businessPage(member, { hasSecret: true, secret }))
      },
      { member: { ownersTo: 'set or rotate the identity secret' }, parse: 'urlencoded', body: TokenOnlyForm },
    )
}
