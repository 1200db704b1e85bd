import { byAdmin } from '../audit/trail.ts'
import { Elysia } from 'elysia'
import type { Db } from '../../db/client.ts'
import { businesses, flows } from '../../db/schema/index.ts'
import { AdminPageQuery, adminPage, pageSchema } from '../shared/paging.ts'
import { strictBody } from '../shared/validation.ts'
import { parseJsonBody } from '../http/json-body.ts'
import { readApiText } from '../http/request-body.ts'
import { KeyRecordSchema } from '../keys/model.ts'
import { DEFAULT_ROLL_GRACE_SECONDS, toKeyRecord, type KeyService } from '../keys/service.ts'
import { auditRoutes } from './audit.ts'
import { identityRoutes } from './identity.ts'
import { usageRoutes } from './usage.ts'
import { webhookRoutes } from './webhooks.ts'
import type { WebhookEndpoints } from '../webhooks/endpoints.ts'
import type { AdminGuard } from '../http/admin-guard.ts'
import { getBusiness, listBusinesses, requireBusiness, toBusinessRecord } from './businesses.ts'
import { checkRetentionDays, updateBusiness } from '../businesses/settings.ts'
import type { Retention } from '../events/retention.ts'
import { checkErasureBody, ErasureBodySchema, ErasureCreated, ErasureRecordSchema, type Erasures } from '../events/erasure.ts'
import { FlowRecord, toFlowRecord } from '../flows/model.ts'
import { flowReadRoutes } from './flows.ts'
import {
  BusinessChanges,
  BusinessRecordSchema,
  ErasureParams,
  IdParams,
  KeyChanges,
  NewBusiness,
  NewFlow,
  NewKey,
  RevealedKeySchema,
  revealedKey,
  RollKey,
} from './model.ts'
import { alsoAnswers, noContent } from '../http/openapi-document.ts'
import { memberRoutes } from './members.ts'
import type { Passwords } from '../members/passwords.ts'

const newBusiness = strictBody(NewBusiness)
const businessChanges = strictBody(BusinessChanges)
const newKey = strictBody(NewKey)
const keyChanges = strictBody(KeyChanges)
const newFlow = strictBody(NewFlow)
const rollKey = strictBody(RollKey)

/**
 * The operators' API. The token is checked in `parse` and
 * `transform`, before any body or parameter is looked at, like the key chain.
 */
export function adminRoutes(deps: {
  db: Db
  keys: KeyService
  requireAdmin: AdminGuard
  retention: Retention
  erasures: Erasures
  passwords: Passwords
  webhooks: WebhookEndpoints
}) {
  const { db, keys, requireAdmin, retention, erasures, passwords, webhooks } = deps
  const operatorDays = retention.operatorDays

  return new Elysia({ name: 'admin', prefix: '/admin/v0', detail: { tags: ['admin'], security: [{ adminToken: [] }] } })
    .onParse(requireAdmin)
    .onParse(readAdminJson)
    .onTransform(requireAdmin)
    .use(memberRoutes({ db, requireAdmin, passwords }))
    .use(flowReadRoutes({ db, requireAdmin }))
    .post(
      '/businesses',
      async ({ body, set }) => {
        const [row] = await db.insert(businesses).values({ name: body.name.trim() }).returning()
        set.status = 201
        return toBusinessRecord(row!, operatorDays)
      },
      {
        body: newBusiness.schema,
        transform: newBusiness.check,
        parse: 'json',
        response: { 201: BusinessRecordSchema },
        detail: { summary: 'Create a business' },
      },
    )
    .get('/businesses', ({ query }) => listBusinesses(db, adminPage(query), operatorDays), {
      query: AdminPageQuery,
      response: pageSchema(BusinessRecordSchema),
      detail: { summary: 'List businesses, newest first' },
    })
    .get('/businesses/:id', async ({ params }) => toBusinessRecord(await getBusiness(db, params.id), operatorDays), {
      params: IdParams,
      response: BusinessRecordSchema,
      detail: { summary: 'Show a business, with its event retention' },
    })
    .patch(
      '/businesses/:id',
      async ({ params, body, set }) => {
        const changes = {
          name: body.name?.trim(),
          eventRetentionDays: body.eventRetentionDays === undefined ? undefined : checkRetentionDays(body.eventRetentionDays, operatorDays),
        }
        const row = await updateBusiness(db, retention, params.id, changes, byAdmin(set))
        return toBusinessRecord(row, operatorDays)
      },
      {
        params: IdParams,
        body: businessChanges.schema,
        transform: businessChanges.check,
        parse: 'json',
        response: BusinessRecordSchema,
        detail: {
          summary: 'Change a business: its name, or how many days its events are kept',
          description:
            "eventRetentionDays: 1 to the operator's EVENT_RETENTION_DAYS, or null for the operator's value. Reads stop answering older events at once, and lowering it is final: raising it again never brings back the events it expired. Audited as business.updated.",
        },
      },
    )
    .post(
      '/businesses/:id/erasures',
      async ({ params, body, set }) => {
        await requireBusiness(db, params.id)
        const created = await erasures.request(params.id, body, byAdmin(set))
        set.status = 202
        return { id: created.id, status: 'pending' as const }
      },
      {
        params: IdParams,
        body: ErasureBodySchema,
        transform: checkErasureBody,
        parse: 'json',
        response: { 202: ErasureCreated },
        detail: {
          summary: "Erase a person's events in a business, by personId and/or anonymousId",
          description:
            'As POST /api/v0/analytics/erasures: reads hide the events at once, storage deletes them in the background; audited as analytics.erased with the count, never the identifier. At most 100 pending a business, as for the API: more answer 429 rate_limited.',
        },
      },
    )
    .get('/businesses/:id/erasures/:erasureId', ({ params }) => erasures.get(params.id, params.erasureId), {
      params: ErasureParams,
      response: ErasureRecordSchema,
      detail: { summary: 'Show an erasure request of a business' },
    })
    .post(
      '/businesses/:id/keys',
      async ({ params, body, set }) => {
        const created = await keys.create(params.id, body, byAdmin(set))
        set.status = 201
        return revealedKey(created)
      },
      {
        params: IdParams,
        body: newKey.schema,
        transform: newKey.check,
        parse: 'json',
        response: { 201: RevealedKeySchema },
        detail: { summary: 'Create a key; the answer is the only place the key ever appears' },
      },
    )
    .get(
      '/businesses/:id/keys',
      async ({ params, query }) => {
        await requireBusiness(db, params.id)
        return keys.listPage(params.id, adminPage(query))
      },
      {
        params: IdParams,
        query: AdminPageQuery,
        response: pageSchema(KeyRecordSchema),
        detail: { summary: "List a business's keys, newest first" },
      },
    )
    .get('/keys/:id', async ({ params }) => toKeyRecord(await keys.get(null, params.id)), {
      params: IdParams,
      response: KeyRecordSchema,
      detail: { summary: 'Show a key' },
    })
    .patch('/keys/:id', ({ params, body, set }) => keys.update(null, params.id, body, byAdmin(set)), {
      params: IdParams,
      body: keyChanges.schema,
      transform: keyChanges.check,
      parse: 'json',
      response: KeyRecordSchema,
      detail: { summary: 'Change a key; effective on its next request', ...alsoAnswers('conflict') },
    })
    .delete(
      '/keys/:id',
      async ({ params, set }) => {
        await keys.revoke(null, params.id, byAdmin(set))
        set.status = 204
        return null
      },
      { params: IdParams, detail: { summary: 'Revoke a key (the record and its data are kept)', ...noContent('Revoked') } },
    )
    .post(
      '/keys/:id/roll',
      async ({ params, body, set }) => {
        const rolled = await keys.roll(null, params.id, body.graceSeconds ?? DEFAULT_ROLL_GRACE_SECONDS, byAdmin(set))
        set.status = 201
        return revealedKey(rolled)
      },
      {
        params: IdParams,
        body: rollKey.schema,
        transform: rollKey.check,
        parse: 'json',
        response: { 201: RevealedKeySchema },
        detail: {
          summary: 'Roll a key: a new key with the same settings; the old one works until the end of the grace',
          description:
            'The old key gets replacedBy and an expiresAt at now + graceSeconds (or its own earlier expiry); graceSeconds 0 ends it at once. A revoked, expired or already replaced key answers 409.',
          ...alsoAnswers('conflict'),
        },
      },
    )
    .use(auditRoutes({ db, keys }))
    .use(identityRoutes({ db }))
    .use(usageRoutes({ db, keys }))
    .use(webhookRoutes({ db, endpoints: webhooks }))
    .post(
      '/businesses/:id/flows',
      async ({ params, body, set }) => {
        await requireBusiness(db, params.id)
        const [row] = await db.insert(flows).values({ businessId: params.id, name: body.name.trim() }).returning()
        set.status = 201
        return toFlowRecord(row!)
      },
      {
        params: IdParams,
        body: newFlow.schema,
        transform: newFlow.check,
        parse: 'json',
        response: { 201: FlowRecord },
        detail: { summary: 'Define a flow' },
      },
    )
}

/** Bodies go through the same reader and screen as the API's (1 MiB, JSON only, depth, storable strings). */
async function readAdminJson({ request }: { request: Request }): Promise<unknown> {
  // readApiText: over 1 MiB a 413, another content type a 415, both with the envelope and unread.
  const text = await readApiText(request)
  return text === null ? undefined : parseJsonBody(text)
}
