import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { byAdmin } from '../audit/trail.ts'
import { alsoAnswers, noContent } from '../http/openapi-document.ts'
import { Uuid } from '../shared/uuid.ts'
import { strictBody } from '../shared/validation.ts'
import type { WebhookEndpoints } from '../webhooks/endpoints.ts'
import { CreatedEndpointSchema, DeliveryRecordSchema, EndpointChanges, EndpointRecordSchema, NewEndpoint } from '../webhooks/model.ts'
import { requireBusiness } from './businesses.ts'
import { IdParams } from './model.ts'

const newEndpoint = strictBody(NewEndpoint)
const endpointChanges = strictBody(EndpointChanges)
const EndpointParams = t.Object({ id: Uuid, endpointId: Uuid })
const DeliveryParams = t.Object({ id: Uuid, endpointId: Uuid, deliveryId: Uuid })

/** A business's webhook endpoints and their deliveries (docs/webhooks.md), for operators. */
export function webhookRoutes({ db, endpoints }: { db: Db; endpoints: WebhookEndpoints }) {
  return new Elysia({ name: 'admin/webhooks' })
    .post(
      '/businesses/:id/webhooks',
      async ({ params, body, set }) => {
        await requireBusiness(db, params.id)
        const created = await endpoints.create(params.id, body, byAdmin(set))
        set.status = 201
        return { ...created.record, secret: created.secret }
      },
      {
        params: IdParams,
        body: newEndpoint.schema,
        transform: newEndpoint.check,
        parse: 'json',
        response: { 201: CreatedEndpointSchema },
        detail: {
          summary: 'Add a webhook endpoint; the answer is the only place its signing secret appears',
          description:
            'url: https (http only for hosts in WEBHOOK_ALLOWED_HOSTS), never an address that resolves to loopback, private, link-local or reserved space. At most 10 a business (409 past that). Audited as webhook.created.',
          ...alsoAnswers('conflict'),
        },
      },
    )
    .get(
      '/businesses/:id/webhooks',
      async ({ params }) => {
        await requireBusiness(db, params.id)
        return { data: await endpoints.list(params.id) }
      },
      {
        params: IdParams,
        response: t.Object({ data: t.Array(EndpointRecordSchema) }),
        detail: { summary: "List a business's webhook endpoints" },
      },
    )
    .get('/businesses/:id/webhooks/:endpointId', ({ params }) => endpoints.get(params.id, params.endpointId), {
      params: EndpointParams,
      response: EndpointRecordSchema,
      detail: { summary: 'Show a webhook endpoint' },
    })
    .patch(
      '/businesses/:id/webhooks/:endpointId',
      ({ params, body, set }) => endpoints.update(params.id, params.endpointId, body, byAdmin(set)),
      {
        params: EndpointParams,
        body: endpointChanges.schema,
        transform: endpointChanges.check,
        parse: 'json',
        response: EndpointRecordSchema,
        detail: {
          summary: 'Change a webhook endpoint: its url, events, description, or enabled (true sends again after a disabling)',
          description: 'Audited as webhook.updated.',
        },
      },
    )
    .delete(
      '/businesses/:id/webhooks/:endpointId',
      async ({ params, set }) => {
        await endpoints.remove(params.id, params.endpointId, byAdmin(set))
        set.status = 204
        return null
      },
      {
        params: EndpointParams,
        detail: { summary: 'Remove a webhook endpoint and its deliveries (audited as webhook.deleted)', ...noContent('Removed') },
      },
    )
    .post(
      '/businesses/:id/webhooks/:endpointId/test',
      async ({ params, set }) => {
        const sent = await endpoints.test(params.id, params.endpointId)
        set.status = 202
        return sent
      },
      {
        params: EndpointParams,
        response: { 202: t.Object({ eventId: t.String({ description: 'The webhook-id of the test delivery' }) }) },
        detail: { summary: 'Send a webhook.test event to this endpoint', ...alsoAnswers('conflict') },
      },
    )
    .get(
      '/businesses/:id/webhooks/:endpointId/deliveries',
      async ({ params }) => ({ data: await endpoints.deliveries(params.id, params.endpointId) }),
      {
        params: EndpointParams,
        response: t.Object({ data: t.Array(DeliveryRecordSchema) }),
        detail: { summary: "A webhook endpoint's latest 50 deliveries, newest first" },
      },
    )
    .post(
      '/businesses/:id/webhooks/:endpointId/deliveries/:deliveryId/resend',
      async ({ params, set }) => {
        await endpoints.resend(params.id, params.endpointId, params.deliveryId)
        set.status = 202
        return { resent: true as const }
      },
      {
        params: DeliveryParams,
        response: { 202: t.Object({ resent: t.Literal(true) }) },
        detail: {
          summary: 'Send a delivery again now, with the same webhook-id; its retries start over',
          ...alsoAnswers('conflict'),
        },
      },
    )
}
