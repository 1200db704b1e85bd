import { sql } from 'drizzle-orm'
import { check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
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
 * `dedupeKey`: an event that must be told once whoever notices it (a key's expiry notice,
 * named by the key, its expiry and the notice); a second insert with it is skipped.
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
    dedupeKey: text('dedupe_key'),
  },
  (table) => [
    index('webhook_events_business_idx').on(table.businessId, table.createdAt),
    uniqueIndex('webhook_events_dedupe_idx').on(table.dedupeKey),
    check('webhook_events_type_check', sql.raw(`type in (${WEBHOOK_EVENT_TYPES.map((type) => `'${type}'`).join(', ')})`)),
  ],
)

/**
 * Where a business wants its events (docs/webhooks.md): at most 10 a business. `secret`
 * signs every delivery (`whsec_` and base64 of 32 random bytes; shown once, when created).
 * `events`: the types it takes. `failingSince`: the first failed attempt of the current run
 * of failures, cleared by a success; after 5 days of failing the endpoint is disabled
 * (`disabledAt`), and its business told on the dashboard.
 */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    url: text('url').notNull(),
    description: text('description'),
    events: text('events').array().notNull(),
    secret: text('secret').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    failingSince: timestamp('failing_since', { withTimezone: true, precision: 3 }),
    disabledAt: timestamp('disabled_at', { withTimezone: true, precision: 3 }),
  },
  (table) => [index('webhook_endpoints_business_idx').on(table.businessId, table.createdAt)],
)

/** A delivery's states: waiting for its next attempt, delivered (a 2xx), or failed after its last retry. */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const

/**
 * One event for one endpoint: written with the event (an outbox), attempted until a 2xx or
 * the last retry. `leasedUntil`: an instance sending it holds it until then (taken with
 * `FOR UPDATE SKIP LOCKED`), so no two instances send it at once, and one that died is
 * taken over after it. `lastStatus`: the receiver's answer code (null: no answer, see
 * `lastError`).
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    endpointId: uuid('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventId: uuid('event_id')
      .notNull()
      .references(() => webhookEvents.id),
    status: text('status', { enum: DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    leasedUntil: timestamp('leased_until', { withTimezone: true, precision: 3 }),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true, precision: 3 }),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('webhook_deliveries_endpoint_event_idx').on(table.endpointId, table.eventId),
    index('webhook_deliveries_due_idx').on(table.nextAttemptAt).where(sql`${table.status} = 'pending'`),
    index('webhook_deliveries_endpoint_idx').on(table.endpointId, table.createdAt),
    // The pruning asks of each old event whether a delivery still needs it.
    index('webhook_deliveries_event_idx').on(table.eventId),
    check('webhook_deliveries_status_check', sql`${table.status} in ('pending', 'delivered', 'failed')`),
  ],
)
