import { sql } from 'drizzle-orm'
import { check, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { businesses } from './core.ts'

/** The events a business's webhooks may be told of; each is written by the change that causes it. */
export const WEBHOOK_EVENT_TYPES = [
  'key.created',
  'key.revoked',
  'key.rolled',
  'key.expiring',
  'key.leaked',
  'erasure.completed',
  'webhook.test',
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/**
 * What happened, for the business's webhooks: written in the transaction of the change that
 * caused it (an outbox), so an event is never lost across a restart and never sent for a
 * change that rolled back. `payload` names ids and never holds a key or a person's
 * identifier. Ids are UUIDv7: the delivery reads them in the order they happened.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: uuid('id').primaryKey(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    type: text('type', { enum: WEBHOOK_EVENT_TYPES }).notNull(),
    payload: jsonb('payload').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    index('webhook_events_business_idx').on(table.businessId, table.createdAt),
    check('webhook_events_type_check', sql.raw(`type in (${WEBHOOK_EVENT_TYPES.map((type) => `'${type}'`).join(', ')})`)),
  ],
)
