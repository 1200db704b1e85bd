import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * Tracked events, an append-only log written in batches by the group committer
 * (src/events/group-commit.ts). `occurredAt` is the event's own `timestamp`, or the
 * receive time when it sent none; lists page on (occurredAt, id), newest first, so it has
 * millisecond precision (a cursor carries it as a JavaScript Date).
 *
 * No foreign keys on purpose: business and key ids come from the authenticated key, and a
 * foreign key would add a lookup and a `FOR KEY SHARE` lock on the parent row to every
 * inserted event. Keys are never deleted (revoking keeps the row), so the ids stay valid.
 *
 * Range-partitioned by `occurredAt`, one partition a calendar month (UTC), named
 * `analytics_events_YYYY_MM` (docs/decisions.md, "Event partitions"). Drizzle cannot
 * declare partitioning: migration 0009 made the table partitioned by hand, and the event
 * maintenance (src/events/maintenance.ts) creates partitions ahead and drops expired ones.
 * There is no DEFAULT partition: an event needs the partition of its month.
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
  // Only the indexes the reads need (every insert pays for each one). A partitioned table's
  // unique keys must hold its partition column, so the primary key is (businessId,
  // occurredAt, id): a business stores an event id once per timestamp, and the insert skips
  // one already there (ON CONFLICT); an id sent without timestamp is recognized through
  // analytics_untimed_ids (docs/decisions.md, "Exactly once across partitions"). In this
  // order the key is also the untyped list's index (scanned backwards), so the table has
  // two indexes again rather than issue 17's three; the typed list has its own.
  (table) => [
    primaryKey({ name: 'analytics_events_pkey', columns: [table.businessId, table.occurredAt, table.id] }),
    index('analytics_events_business_type_time_idx').on(table.businessId, table.eventType, table.occurredAt.desc(), table.id.desc()),
  ],
)

/**
 * The ids of events sent with an `id` and no `timestamp`, for 24 hours: such an event is
 * stored with its receive time, which a retry would not repeat, so the events' key alone
 * would store the retry again. The insert stores such an event only when its id is new
 * here, and a retry finds it (docs/decisions.md, "Exactly once across partitions"). The
 * event maintenance deletes rows older than 24 hours.
 */
export const analyticsUntimedIds = pgTable(
  'analytics_untimed_ids',
  {
    businessId: uuid('business_id').notNull(),
    id: uuid('id').notNull(),
    /** The receive time the first try was stored with. */
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull(),
  },
  (table) => [
    primaryKey({ name: 'analytics_untimed_ids_pkey', columns: [table.businessId, table.id] }),
    index('analytics_untimed_ids_occurred_idx').on(table.occurredAt),
  ],
)
