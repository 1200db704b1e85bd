import { eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'
import { byMember } from '../audit/trail.ts'
import { updateBusiness } from '../businesses/settings.ts'
import { effectiveDays, type Retention } from '../events/retention.ts'
import { identitySecretOf, rollIdentitySecret } from '../identity/secret.ts'
import { businessPage, type RetentionView } from './business-views.ts'
import { NO_SUCH_PAGE, renderFailures } from './failures.ts'
import { FormField, TokenOnlyForm } from './forms.ts'
import { html } from './html.ts'
import { htmlPage, redirect } from './http.ts'
import { BUSINESS_PATH } from './views.ts'
import type { memberMacro } from './member.ts'

/**
 * Business settings: the identity secret and how long events are kept, both changed by
 * owners only.
 */
export function businessPlugin(deps: { db: Db; member: ReturnType<typeof memberMacro>; retention: Retention }) {
  const { db, retention } = deps
  const operatorDays = retention.operatorDays

  async function retentionOf(businessId: string, form?: RetentionView['form']): Promise<RetentionView> {
    const [row] = await db.select({ days: businesses.eventRetentionDays }).from(businesses).where(eq(businesses.id, businessId))
    const own = row?.days ?? null
    return { own, effective: effectiveDays(own, operatorDays), operatorDays, form }
  }

  return new Elysia({ name: 'dashboard/business' })
    .use(deps.member)
    .onError(renderFailures(NO_SUCH_PAGE))
    .get(
      '/settings/business',
      async ({ member, query }) =>
        htmlPage(
          200,
          businessPage(member, {
            hasSecret: (await identitySecretOf(db, member.businessId)) !== null,
            retention: await retentionOf(member.businessId),
            flash:
              query.saved !== undefined
                ? html`<div class="alert success" role="status">Event retention saved. Reads follow it from now on.</div>`
                : undefined,
          }),
        ),
      { member: 'page', query: t.Object({ saved: FormField }) },
    )
    .post(
      '/settings/business/retention',
      async ({ member, body }) => {
        const written = (body.eventRetentionDays ?? '').trim()
        let days: number | null = null
        if (written !== '') {
          days = /^[0-9]{1,6}$/.test(written) ? Number(written) : Number.NaN
          if (!(days >= 1 && days <= operatorDays)) {
            const error = `Event retention must be a whole number of days from 1 to ${operatorDays}, or empty for the operator's ${operatorDays}.`
            return htmlPage(
              400,
              businessPage(member, {
                hasSecret: (await identitySecretOf(db, member.businessId)) !== null,
                retention: await retentionOf(member.businessId, { value: written.slice(0, 40), error }),
              }),
            )
          }
        }
        await updateBusiness(db, retention, member.businessId, { eventRetentionDays: days }, byMember(member.email))
        return redirect(`${BUSINESS_PATH}?saved=1#retention`)
      },
      {
        member: { ownersTo: 'change how long events are kept' },
        parse: 'urlencoded',
        body: t.Object({ csrf: FormField, eventRetentionDays: FormField }),
      },
    )
    .post(
      '/settings/business/identity-secret',
      async ({ member }) => {
        const secret = await rollIdentitySecret(db, member.businessId)
        // Rendered, not redirected: the secret exists in this answer only (no-store).
        return htmlPage(201, businessPage(member, { hasSecret: true, secret, retention: await retentionOf(member.businessId) }))
      },
      { member: { ownersTo: 'set or rotate the identity secret' }, parse: 'urlencoded', body: TokenOnlyForm },
    )
}
