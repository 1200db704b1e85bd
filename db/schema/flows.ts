import { sql } from 'drizzle-orm'
import { check, index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys, businesses } from './core.ts'

/** Flows are defined by operators (admin API) and triggered through /api/v0/flow/:id/trigger. */
export const flows = pgTable(
  'flows',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    name: text('name').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [index('flows_business_idx').on(table.businessId)],
)

export const FLOW_RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const

/**
 * One trigger of a flow. A run is created `queued`; whatever executes flows moves the
 * status on. `idempotencyKey` records the key the trigger was sent with, for reading back;
 * deduplication goes through flow_idempotency_keys.
 */
export const flowRuns = pgTable(
  'flow_runs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    flowId: uuid('flow_id')
      .notNull()
      .references(() => flows.id),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    input: jsonb('input').$type<Record<string, unknown>>(),
    status: text('status', { enum: FLOW_RUN_STATUSES }).notNull().default('queued'),
    idempotencyKey: text('idempotency_key'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    index('flow_runs_flow_idx').on(table.flowId, table.createdAt),
    check('flow_runs_status_check', sql`${table.status} in ('queued', 'running', 'succeeded', 'failed')`),
  ],
)

/**
 * The Idempotency-Key of a flow's trigger and the run it produced. An idempotency key
 * belongs to the API key that sent it: one row per (flow, API key, idempotency key).
 * `bodyDigest` is the SHA-256 of the canonical trigger body, so a replay with another
 * body can be refused (422 idempotency_key_reused).
 * While `createdAt` is under 24 h old a trigger with that key answers `runId` again;
 * after that the next trigger takes the row over (one guarded upsert, so two concurrent
 * triggers cannot both create a run).
 */
export const flowIdempotencyKeys = pgTable(
  'flow_idempotency_keys',
  {
    flowId: uuid('flow_id')
      .notNull()
      .references(() => flows.id),
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    idempotencyKey: text('idempotency_key').notNull(),
    bodyDigest: text('body_digest').notNull(),
    runId: uuid('run_id')
      .notNull()
      .references(() => flowRuns.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    primaryKey({
      name: 'flow_idempotency_keys_pk',
      columns: [table.flowId, table.keyId, table.idempotencyKey],
    }),
  ],
)
