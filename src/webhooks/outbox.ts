import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { webhookEvents, type WebhookEventType } from '../../db/schema/index.ts'

export interface WebhookEventInput {
  businessId: string
  type: WebhookEventType
  /** Ids and facts, never a key or a person's identifier. */
  payload: Record<string, unknown>
  /** Told once whoever notices it: a second event with this key is skipped (db/schema/webhooks.ts). */
  dedupeKey?: string
  /** Only this endpoint (a test message); otherwise every enabled endpoint of the business that takes the type. */
  endpointId?: string
}

/**
 * Writes an event for the business's webhooks on the transaction of the change that caused
 * it, with one delivery per endpoint that takes it (an outbox): the change, its event and
 * its deliveries commit together or not at all, and src/webhooks/delivery.ts sends them
 * from the table, whichever instance is up. Answers the event's id, or null when the dedupe
 * key was told already.
 */
export async function recordWebhookEvent(tx: Db, event: WebhookEventInput): Promise<string | null> {
  const id = Bun.randomUUIDv7()
  const [written] = await tx
    .insert(webhookEvents)
    .values({ id, businessId: event.businessId, type: event.type, payload: event.payload, dedupeKey: event.dedupeKey ?? null })
    .onConflictDoNothing()
    .returning({ id: webhookEvents.id })
  if (!written) return null
  const takes = event.endpointId === undefined ? sql`events @> array[${event.type}]::text[]` : sql`id = ${event.endpointId}::uuid`
  await tx.execute(sql`
    insert into webhook_deliveries (business_id, endpoint_id, event_id)
    select business_id, id, ${id}::uuid from webhook_endpoints
    where business_id = ${event.businessId}::uuid and disabled_at is null and ${takes}`)
  return id
}
