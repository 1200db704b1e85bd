import type { Db } from '../../db/client.ts'
import { webhookEvents, type WebhookEventType } from '../../db/schema/index.ts'

/**
 * Writes an event for the business's webhooks on the transaction of the change that caused
 * it (db/schema/webhooks.ts): the change and its event commit together or not at all. The
 * payload names ids, never a key or a person's identifier.
 */
export async function recordWebhookEvent(
  tx: Db,
  event: { businessId: string; type: WebhookEventType; payload: Record<string, unknown> },
): Promise<void> {
  await tx.insert(webhookEvents).values({ id: Bun.randomUUIDv7(), businessId: event.businessId, type: event.type, payload: event.payload })
}
