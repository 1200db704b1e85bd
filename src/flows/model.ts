import { t } from 'elysia'
import { FLOW_RUN_STATUSES, type flowRuns, type flows } from '../../db/schema/index.ts'

/**
 * A flow and its runs on the wire. Operators define flows and read their runs through the
 * admin API (src/admin/flows.ts); keys trigger runs and read one through /api/v0/flow
 * (src/areas/flow/). Both show these records.
 */

export const FlowRecord = t.Object({ id: t.String(), businessId: t.String(), name: t.String(), createdAt: t.String() })

export type Flow = typeof FlowRecord.static

export function toFlowRecord(row: typeof flows.$inferSelect): Flow {
  return { id: row.id, businessId: row.businessId, name: row.name, createdAt: row.createdAt.toISOString() }
}

export const RunStatusSchema = t.UnionEnum(FLOW_RUN_STATUSES)

export const FlowRun = t.Object({
  id: t.String(),
  flowId: t.String(),
  status: RunStatusSchema,
  input: t.Nullable(t.Record(t.String(), t.Unknown())),
  idempotencyKey: t.Nullable(t.String()),
  keyId: t.String({ description: 'The API key that triggered the run.' }),
  createdAt: t.String(),
})

export type RunRecord = typeof FlowRun.static

export function toRunRecord(run: typeof flowRuns.$inferSelect): RunRecord {
  return {
    id: run.id,
    flowId: run.flowId,
    status: run.status,
    input: run.input,
    idempotencyKey: run.idempotencyKey,
    keyId: run.keyId,
    createdAt: run.createdAt.toISOString(),
  }
}
