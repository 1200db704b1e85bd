import { Elysia } from 'elysia'
import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { flowRuns, flows } from '../../db/schema/index.ts'
import { ApiError } from '../errors.ts'
import { AdminPageQuery, adminPage, listAdminPage, pageSchema } from '../shared/paging.ts'
import { FlowRecord, FlowRun, toFlowRecord, toRunRecord } from '../flows/model.ts'
import type { AdminGuard } from '../http/admin-guard.ts'
import { IdParams } from './model.ts'
import { requireBusiness } from './businesses.ts'

/**
 * What operators read about flows: a business's flows and a flow's runs, newest first,
 * a page at a time. Mounted inside adminRoutes (the /admin/v0 prefix); the token is
 * checked here too, so these routes stay closed even if mounted elsewhere.
 */
export function flowReadRoutes(deps: { db: Db; requireAdmin: AdminGuard }) {
  const { db, requireAdmin } = deps

  return new Elysia({ name: 'admin/flows', detail: { tags: ['admin'], security: [{ adminToken: [] }] } })
    .onParse(requireAdmin)
    .onTransform(requireAdmin)
    .get(
      '/businesses/:id/flows',
      async ({ params, query }) => {
        await requireBusiness(db, params.id)
        return listAdminPage(db, flows, eq(flows.businessId, params.id), adminPage(query), toFlowRecord)
      },
      {
        params: IdParams,
        query: AdminPageQuery,
        response: pageSchema(FlowRecord),
        detail: { summary: "List a business's flows, newest first" },
      },
    )
    .get(
      '/flows/:id/runs',
      async ({ params, query }) => {
        const [flow] = await db.select({ id: flows.id }).from(flows).where(eq(flows.id, params.id))
        if (!flow)
          throw new ApiError('not_found', `No flow with id ${params.id}. List a business's flows with GET /admin/v0/businesses/:id/flows.`)
        return listAdminPage(db, flowRuns, eq(flowRuns.flowId, params.id), adminPage(query), toRunRecord)
      },
      {
        params: IdParams,
        query: AdminPageQuery,
        response: pageSchema(FlowRun),
        detail: { summary: "List a flow's runs, newest first" },
      },
    )
}
