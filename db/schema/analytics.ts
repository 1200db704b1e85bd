import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * Tracked events, an append-only log written in batches by the group committer
 * (src/areas/analytics/group-commit.ts). `occurredAt` is the event's own `timestamp`, or the
 * receive time when it sent none; lists page on (occurredAt, id), newest first, so it has
 * millisecond precision (a cursor carries it as a JavaScript Date).
 *
 * No foreign keys on purpose: business and key ids come from the authenticated key, and a
 * foreign key would add a lookup and a `FOR KEY SHARE` lock on the parent row to every
 * inserted event. Keys are never deleted (revoking keeps the row), so the ids stay valid.
 */
export const analyticsEvents = pgTable(
  'analytics_events',
  {
    /**
     * The sender's own UUID when the event carried one (a retry sends the same), else a
     * UUIDv7 from the service (time-ordered); the default serves other writers.
     */
    id: uuid('id').notNull().defaultRandom(),
    businessId: uuid('business_id').notNull(),
    keyId: uuid('key_id').notNull(),
    /** The request's Origin header, null when it sent none (server-side callers). */
    origin: text('origin'),
    eventType: text('event_type').notNull(),
    url: text('url'),
    referrer: text('referrer'),
    anonymousId: text('anonymous_id'),
    personId: text('person_id'),
    properties: jsonb('properties').$type<Record<string, unknown>>().notNull().default(sql`'{}'::jsonb`),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull(),
  },
  // Only the indexes the reads need (every insert pays for each one). The primary key is
  // (businessId, id): a business stores an event id once, whatever its occurredAt (a retry
  // without timestamp gets another), and the insert skips ids already there (ON CONFLICT).
  // Lists page on (occurredAt, id) within a business, with or without a type: one index each
  // (the untyped one scanned backwards). Issue 17: 2 indexes to 3, bench/README.md.
  (table) => [
    primaryKey({ name: 'analytics_events_pkey', columns: [table.businessId, table.id] }),
    index('analytics_events_business_time_idx').on(table.businessId, table.occurredAt, table.id),
    index('analytics_events_business_type_time_idx').on(table.businessId, table.eventType, table.occurredAt.desc(), table.id.desc()),
  ],
)
