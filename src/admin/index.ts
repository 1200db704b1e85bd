import { Elysia, t } from 'elysia'
import { desc, eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses, flows } from '../../db/schema/index.ts'
import { ApiError } from '../errors.ts'
import { strictBody } from '../areas/shared/validation.ts'
import { parseJsonBody } from '../http/json-body.ts'
import { toKeyRecord, type KeyService } from '../keys/service.ts'
import type { AdminGuard } from './auth.ts'
import { alsoAnswers, noContent } from '../http/openapi-document.ts'
import { BusinessSchema, FlowSchema, IdParams, KeyChanges, KeyRecordSchema, NewBusiness, NewFlow, NewKey } from './model.ts'
import { memberRoutes } from './members.ts'


const newBusiness = strictBody(NewBusiness)
const newKey = strictBody(NewKey)
const keyChanges = strictBody(KeyChanges)
const newFlow = strictBody(NewFlow)

/**
 * The operators' API (contract section 7). The token is checked in `parse` and
 * `transform`, before any body or parameter is looked at, like the key chain.
 */
export function adminRoutes(deps: { db: Db; keys: KeyService; requireAdmin: AdminGuard }) {
  const { db, keys, requireAdmin } = deps

  return new Elysia({ name: 'admin', prefix: '/admin/v0', detail: { tags: ['admin'], security: [{ adminToken: [] }] } })
    .onParse(requireAdmin)
    .onParse(readAdminJson)
    .onTransform(requireAdmin)
    .use(memberRoutes({ db, requireAdmin }))
    .post(
      '/businesses',
      async ({ body, set }) => {
        const [row] = await db.insert(businesses).values({ name: body.name.trim() }).returning()
        set.status = 201
        return { id: row!.id, name: row!.name, createdAt: row!.createdAt.toISOString() }
      },
      { body: newBusiness.schema, transform: newBusiness.transform, parse: 'json', response: { 201: BusinessSchema }, detail: { summary: 'Create a business' } },
    )
    .get(
      '/businesses',
      async () => {
        const rows = await db.select().from(businesses).orderBy(desc(businesses.createdAt))
        return { data: rows.map((b) => ({ id: b.id, name: b.name, createdAt: b.createdAt.toISOString() })) }
      },
      { response: t.Object({ data: t.Array(BusinessSchema) }), detail: { summary: 'List businesses' } },
    )
    .post(
      '/businesses/:id/keys',
      async ({ params, body, set }) => {
        const created = await keys.create(params.id, body)
        set.status = 201
        return { ...created.record, key: created.key }
      },
      {
        params: IdParams,
        body: newKey.schema,
        transform: newKey.transform,
        parse: 'json',
        response: { 201: t.Composite([KeyRecordSchema, t.Object({ key: t.String() })]) },
        detail: { summary: 'Create a key; the answer is the only place the key ever appears' },
      },
    )
    .get(
      '/businesses/:id/keys',
      async ({ params }) => {
        await requireBusiness(db, params.id)
        return { data: await keys.list(params.id) }
      },
      { params: IdParams, response: t.Object({ data: t.Array(KeyRecordSchema) }), detail: { summary: "List a business's keys" } },
    )
    .get('/keys/:id', async ({ params }) => toKeyRecord(await keys.get(null, params.id)), {
      params: IdParams,
      response: KeyRecordSchema,
      detail: { summary: 'Show a key' },
    })
    .patch('/keys/:id', ({ params, body }) => keys.update(null, params.id, body), {
      params: IdParams,
      body: keyChanges.schema,
      transform: keyChanges.transform,
      parse: 'json',
      response: KeyRecordSchema,
      detail: { summary: 'Change a key; effective on its next request', ...alsoAnswers('conflict') },
    })
    .delete(
      '/keys/:id',
      async ({ params, set }) => {
        await keys.revoke(null, params.id)
        set.status = 204
        return null
      },
      { params: IdParams, detail: { summary: 'Revoke a key (the record and its data are kept)', ...noContent('Revoked') } },
    )
    .post(
      '/businesses/:id/flows',
      async ({ params, body, set }) => {
        await requireBusiness(db, params.id)
        const [row] = await db.insert(flows).values({ businessId: params.id, name: body.name.trim() }).returning()
        set.status = 201
        return { id: row!.id, businessId: row!.businessId, name: row!.name, createdAt: row!.createdAt.toISOString() }
      },
      { params: IdParams, body: newFlow.schema, transform: newFlow.transform, parse: 'json', response: { 201: FlowSchema }, detail: { summary: 'Define a flow' } },
    )
}

/** JSON bodies go through the same screen as the API's (depth, storable strings); others are Elysia's. */
function readAdminJson({ request }: { request: Request }): Promise<unknown> | undefined {
  if (request.body === null || !/^application\/json\s*(;|$)/i.test(request.headers.get('content-type') ?? '')) return undefined
  return request.text().then(parseJsonBody)
}

async function requireBusiness(db: Db, id: string): Promise<void> {
  const [row] = await db.select({ id: businesses.id }).from(businesses).where(eq(businesses.id, id))
  if (!row) throw new ApiError('not_found', `No business with id ${id}.`)
}
