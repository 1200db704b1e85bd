import { eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'
import { changedFields, recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { ApiError } from '../errors.ts'
import { effectiveDays, type Retention } from '../events/retention.ts'
import { invalidField } from '../shared/validation.ts'

// A business's own settings (its name and how long it keeps events), as the dashboard and
// the admin API change them.

/** Checks a requested `eventRetentionDays` (1 to the operator's value, or null), naming the field. */
export function checkRetentionDays(value: unknown, operatorDays: number): number | null {
  if (value === null) return null
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > operatorDays) {
    throw invalidField(
      'eventRetentionDays',
      `must be a whole number of days from 1 to ${operatorDays} (the operator's EVENT_RETENTION_DAYS), or null for the operator's value`,
    )
  }
  return value
}

export interface BusinessSettings {
  name: string
  eventRetentionDays: number | null
}

/**
 * Changes a business's settings and records `business.updated` with each changed field, in
 * one transaction; then forgets the cached retention. A 404 for an unknown business.
 * A change of the retention moves `eventsExpiredBefore` up to where the old one reached
 * (the database's clock, as reads use): what it had expired stays expired, whatever the
 * new value, until maintenance deletes it.
 */
export async function updateBusiness(
  db: Db,
  retention: Retention,
  businessId: string,
  changes: Partial<BusinessSettings>,
  by: ChangeAuthor,
): Promise<typeof businesses.$inferSelect> {
  const updated = await db.transaction(async (tx) => {
    const [before] = await tx.select().from(businesses).where(eq(businesses.id, businessId)).for('update')
    if (!before) throw new ApiError('not_found', `No business with id ${businessId}.`)
    const next = {
      name: changes.name ?? before.name,
      eventRetentionDays: changes.eventRetentionDays === undefined ? before.eventRetentionDays : changes.eventRetentionDays,
    }
    const changed = changedFields(before, { ...before, ...next }, ['name', 'eventRetentionDays'])
    if (Object.keys(changed).length === 0) return before
    const oldDays = effectiveDays(before.eventRetentionDays, retention.operatorDays)
    const expired =
      'eventRetentionDays' in changed
        ? { eventsExpiredBefore: sql`greatest(${businesses.eventsExpiredBefore}, now() - make_interval(days => ${oldDays}::int))` }
        : {}
    const [after] = await tx
      .update(businesses)
      .set({ ...next, ...expired })
      .where(eq(businesses.id, businessId))
      .returning()
    await recordChange(tx, { businessId, action: 'business.updated', by, changes: changed })
    return after!
  })
  retention.forget(businessId)
  return updated
}
