import { sql } from 'drizzle-orm'
import { bigint, check, index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * Requests to erase a person's tracked events. While `pending`, reads
 * hide the business's events of that `personId` or `anonymousId` received before
 * `requestedAt` (src/events/read.ts); a worker deletes them in batches
 * (src/events/erasure.ts), then sets `done`, `completedAt` and `deleted`, and clears both
 * identifiers: a finished request keeps no trace of whom it was about. `requestedBy`,
 * `keyId` and `requestId` are the author, for the audit entry written when it is done.
 * `claimedUntil` is a lease: one instance at a time works on a request (taken with
 * `FOR UPDATE SKIP LOCKED`), and a request whose instance died is taken over after it.
 * Part of the event store, so kept as a sharded store needs it (docs/scaling.md): the
 * primary key holds `business_id`, and no foreign key leaves the store.
 */
export const analyticsErasures = pgTable(
  'analytics_erasures',
  {
    id: uuid('id').notNull().defaultRandom(),
    businessId: uuid('business_id').notNull(),
    personId: text('person_id'),
    anonymousId: text('anonymous_id'),
    requestedAt: timestamp('requested_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true, precision: 3 }),
    deleted: bigint('deleted', { mode: 'number' }).notNull().default(0),
    status: text('status', { enum: ['pending', 'done'] })
      .notNull()
      .default('pending'),
    requestedBy: text('requested_by').notNull(),
    keyId: uuid('key_id'),
    requestId: text('request_id'),
    /** The instance working on it holds it until then, renewed each batch; another takes it over after. */
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
  },
  (table) => [
    primaryKey({ name: 'analytics_erasures_pkey', columns: [table.businessId, table.id] }),
    index('analytics_erasures_business_idx').on(table.businessId, table.requestedAt),
    index('analytics_erasures_pending_idx').on(table.businessId).where(sql`${table.status} = 'pending'`),
    // The worker serves the business whose newest finished request is the oldest: one index probe a business.
    index('analytics_erasures_done_idx').on(table.businessId, table.completedAt).where(sql`${table.status} = 'done'`),
    check('analytics_erasures_status_check', sql`${table.status} in ('pending', 'done')`),
    check(
      'analytics_erasures_identifier_check',
      sql`${table.status} = 'done' or ${table.personId} is not null or ${table.anonymousId} is not null`,
    ),
  ],
)
