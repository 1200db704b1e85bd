import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'
import { ApiError } from '../errors.ts'
import { listAdminPage, type AdminPage, type Page } from '../shared/paging.ts'
import { effectiveDays } from '../events/retention.ts'
import type { BusinessRecord } from './model.ts'

export function toBusinessRecord(row: typeof businesses.$inferSelect, operatorRetentionDays: number): BusinessRecord {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt.toISOString(),
    eventRetentionDays: row.eventRetentionDays,
    effectiveEventRetentionDays: effectiveDays(row.eventRetentionDays, operatorRetentionDays),
  }
}

/** Every business, newest first, a page at a time. */
export function listBusinesses(db: Db, page: AdminPage, operatorRetentionDays: number): Promise<Page<BusinessRecord>> {
  return listAdminPage(db, businesses, undefined, page, (row) => toBusinessRecord(row, operatorRetentionDays))
}

/** The business, or a 404 naming the id. */
export async function getBusiness(db: Db, id: string): Promise<typeof businesses.$inferSelect> {
  const [row] = await db.select().from(businesses).where(eq(businesses.id, id))
  if (!row) throw new ApiError('not_found', `No business with id ${id}.`)
  return row
}

/** A 404 naming the id, before anything is read or written under a business that does not exist. */
export async function requireBusiness(db: Db, id: string): Promise<void> {
  const [row] = await db.select({ id: businesses.id }).from(businesses).where(eq(businesses.id, id))
  if (!row) throw new ApiError('not_found', `No business with id ${id}.`)
}
