import { Elysia, t } from 'elysia'
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../db/schema/index.ts'
import { byMember } from '../audit/trail.ts'
import { ApiError } from '../errors.ts'
import { Uuid } from '../shared/uuid.ts'
import type { WebhookEndpoints } from '../webhooks/endpoints.ts'
import { renderFailures, type Missing } from './failures.ts'
import { FormField, listOf, RepeatedFormField, TokenOnlyForm } from './forms.ts'
import { html } from './html.ts'
import { htmlPage, redirect } from './http.ts'
import type { memberMacro } from './member.ts'
import type { SignedIn } from './sessions.ts'
import { endpointPage, secretShownPage, webhooksPage } from './webhook-views.ts'
import { endpointPath, WEBHOOKS_PATH } from './views.ts'

const MISSING_ENDPOINT: Missing = {
  title: 'Endpoint not found',
  page: (member) => `${member.businessName} has no such webhook endpoint.`,
  json: 'No webhook endpoint with that id in your business.',
}

const BASE = '/settings/developers/webhooks'
const EndpointParams = t.Object({ id: Uuid })
const DeliveryParams = t.Object({ id: Uuid, deliveryId: Uuid })
const EndpointFormBody = t.Object({ csrf: FormField, url: FormField, events: RepeatedFormField, description: FormField })
const FLASHES = {
  sent: 'A test was queued: it is sent within a second, and listed below.',
  resent: 'The delivery is sent again within a second, with the same webhook-id.',
  enabled: 'Enabled: waiting deliveries go out now.',
  disabled: 'Disabled: nothing is sent to it until it is enabled again.',
} as const
const PageQuery = t.Object({ done: FormField })

/**
 * The webhooks pages (docs/webhooks.md): every member sees the endpoints and their
 * deliveries, sends a test and resends a delivery; owners add, enable, disable and remove
 * endpoints. Everything goes through the same service as the admin API, by the business shown.
 */
export function webhooksPlugin(deps: { endpoints: WebhookEndpoints; member: ReturnType<typeof memberMacro> }) {
  const { endpoints } = deps

  async function listPage(member: SignedIn, status: number, form?: Parameters<typeof webhooksPage>[1]['form']) {
    return htmlPage(status, webhooksPage(member, { endpoints: await endpoints.list(member.businessId), now: new Date(), form }))
  }

  return new Elysia({ name: 'dashboard/webhooks' })
    .use(deps.member)
    .onError(renderFailures(MISSING_ENDPOINT))
    .get(BASE, ({ member }) => listPage(member, 200), { member: 'page' })
    .post(
      BASE,
      async ({ member, body }) => {
        const form = { url: (body.url ?? '').trim(), events: listOf(body.events), description: (body.description ?? '').trim() }
        const events = form.events.filter((event): event is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(event))
        if (events.length === 0) return listPage(member, 400, { ...form, error: 'Choose at least one event to send.' })
        if (form.description.length > 500) return listPage(member, 400, { ...form, error: 'The description is at most 500 characters.' })
        try {
          const created = await endpoints.create(
            member.businessId,
            { url: form.url, events, description: form.description === '' ? null : form.description },
            byMember(member.email),
          )
          return htmlPage(200, secretShownPage(member, created.record, created.secret))
        } catch (error) {
          if (error instanceof ApiError && (error.code === 'invalid_request' || error.code === 'conflict')) {
            return listPage(member, error.status, { ...form, error: error.message.replace(/^url: /, 'The URL ') })
          }
          throw error
        }
      },
      { member: { ownersTo: 'add webhook endpoints' }, parse: 'urlencoded', body: EndpointFormBody },
    )
    .get(
      `${BASE}/:id`,
      async ({ member, params, query }) => {
        const endpoint = await endpoints.get(member.businessId, params.id)
        const flash = query.done !== undefined && query.done in FLASHES ? FLASHES[query.done as keyof typeof FLASHES] : null
        return htmlPage(
          200,
          endpointPage(member, endpoint, {
            deliveries: await endpoints.deliveries(member.businessId, params.id),
            now: new Date(),
            flash: flash ? html`<div class="alert success" role="status">${flash}</div>` : undefined,
          }),
        )
      },
      { member: 'page', params: EndpointParams, query: PageQuery },
    )
    .post(
      `${BASE}/:id/test`,
      async ({ member, params }) => {
        await endpoints.test(member.businessId, params.id)
        return redirect(`${endpointPath(params.id)}?done=sent#deliveries`)
      },
      { member: 'form', parse: 'urlencoded', params: EndpointParams, body: TokenOnlyForm },
    )
    .post(
      `${BASE}/:id/deliveries/:deliveryId/resend`,
      async ({ member, params }) => {
        await endpoints.resend(member.businessId, params.id, params.deliveryId)
        return redirect(`${endpointPath(params.id)}?done=resent#deliveries`)
      },
      { member: 'form', parse: 'urlencoded', params: DeliveryParams, body: TokenOnlyForm },
    )
    .post(
      `${BASE}/:id/enable`,
      async ({ member, params }) => {
        await endpoints.update(member.businessId, params.id, { enabled: true }, byMember(member.email))
        return redirect(`${endpointPath(params.id)}?done=enabled`)
      },
      { member: { ownersTo: 'enable webhook endpoints' }, parse: 'urlencoded', params: EndpointParams, body: TokenOnlyForm },
    )
    .post(
      `${BASE}/:id/disable`,
      async ({ member, params }) => {
        await endpoints.update(member.businessId, params.id, { enabled: false }, byMember(member.email))
        return redirect(`${endpointPath(params.id)}?done=disabled`)
      },
      { member: { ownersTo: 'disable webhook endpoints' }, parse: 'urlencoded', params: EndpointParams, body: TokenOnlyForm },
    )
    .post(
      `${BASE}/:id/delete`,
      async ({ member, params }) => {
        await endpoints.remove(member.businessId, params.id, byMember(member.email))
        return redirect(WEBHOOKS_PATH)
      },
      { member: { ownersTo: 'remove webhook endpoints' }, parse: 'urlencoded', params: EndpointParams, body: TokenOnlyForm },
    )
}
