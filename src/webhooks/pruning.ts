import { sql } from 'drizzle-orm'
import { queryRows, type Db } from '../../db/client.ts'

/** How long a finished delivery and its event are kept, for the deliveries page and a resend. */
export const WEBHOOK_HISTORY_MS = 30 * 86_400_000
/** Rows one statement deletes; a run deletes until a statement finds fewer. */
const BATCH = 1_000

/**
 * Deletes deliveries finished (delivered or failed) more than 30 days ago, then the events no
 * delivery needs any more, a thousand rows a statement: the outbox grows with every change,
 * and nothing else would ever empty it. Run by one instance at a time (an exclusive job).
 */
export async function pruneWebhookHistory(db: Db, now = new Date()): Promise<{ deliveries: number; events: number }> {
  const before = new Date(now.getTime() - WEBHOOK_HISTORY_MS).toISOString()
  const deleted = { deliveries: 0, events: 0 }
  for (;;) {
    const rows = await queryRows(
      db,
      sql`delete from webhook_deliveries where id in (
            select id from webhook_deliveries
            where status <> 'pending' and created_at < ${before}::timestamptz
            limit ${BATCH})
          returning id`,
    )
    deleted.deliveries += rows.length
    if (rows.length < BATCH) break
  }
  for (;;) {
    const rows = await queryRows(
      db,
      sql`delete from webhook_events where id in (
            select v.id from webhook_events v
            where v.created_at < ${before}::timestamptz
              and not exists (select 1 from webhook_deliveries d where d.event_id = v.id)
            limit ${BATCH})
          returning id`,
    )
    deleted.events += rows.length
    if (rows.length < BATCH) break
  }
  return deleted
}
