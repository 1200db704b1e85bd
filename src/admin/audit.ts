import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { AUDIT_ACTIONS } from '../../db/schema/index.ts'
import { CursorQuery, decodePosition, limitQuery, pageSchema, pageSize, positionCursor, toPage } from '../shared/paging.ts'
import { listChanges, toAuditRecord } from '../audit/trail.ts'
import type { KeyService } from '../keys/service.ts'
import { requireBusiness } from './businesses.ts'
import { IdParams } from './model.ts'

const AUDIT_PAGE = { default: 50, max: 100 } as const

export const AuditEntrySchema = t.Object({
  id: t.String(),
  businessId: t.String({ description: 'The business whose key or member changed: every entry belongs to one.' }),
  at: t.String({ format: 'date-time' }),
  actor: t.String({ description: '"admin", or "member:<email>" for a signed-in member.' }),
  action: t.UnionEnum(AUDIT_ACTIONS),
  keyId: t.Nullable(t.String()),
  requestId: t.Nullable(t.String()),
  changes: t.Record(t.String(), t.Object({ from: t.Any(), to: t.Any() }), {
    description: 'Each changed field as {from, to}; nothing unchanged. Never a key or its digest.',
  }),
})

const AuditQuery = t.Object({ limit: limitQuery(AUDIT_PAGE), cursor: CursorQuery })

/** The audit trail, read only: no route changes or deletes an entry. */
export function auditRoutes({ db, keys }: { db: Db; keys: KeyService }) {
  return new Elysia({ name: 'admin/audit' })
    .get(
      '/businesses/:id/audit',
      async ({ params, query }) => {
        await requireBusiness(db, params.id)
        const limit = pageSize(query.limit, AUDIT_PAGE.default)
        const rows = await listChanges(db, { businessId: params.id, after: decodePosition(query.cursor), limit: limit + 1 })
        return toPage(rows, limit, (row) => positionCursor(row.at, row.id), toAuditRecord)
      },
      {
        params: IdParams,
        query: AuditQuery,
        response: pageSchema(AuditEntrySchema),
        detail: { summary: "A business's audit trail, newest first" },
      },
    )
    .get(
      '/keys/:id/audit',
      async ({ params, query }) => {
        const key = await keys.get(null, params.id)
        const limit = pageSize(query.limit, AUDIT_PAGE.default)
        const rows = await listChanges(db, {
          businessId: key.businessId,
          keyId: key.id,
          after: decodePosition(query.cursor),
          limit: limit + 1,
        })
        return toPage(rows, limit, (row) => positionCursor(row.at, row.id), toAuditRecord)
      },
      {
        params: IdParams,
        query: AuditQuery,
        response: pageSchema(AuditEntrySchema),
        detail: { summary: "One key's audit trail, newest first" },
      },
    )
}
