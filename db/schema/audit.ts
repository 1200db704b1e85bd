import { sql } from 'drizzle-orm'
import { check, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys, businesses } from './core.ts'

/** The actions the trail records. */
export const AUDIT_ACTIONS = [
  'key.created',
  'key.updated',
  'key.revoked',
  'key.rolled',
  'key.leaked',
  'key.browser_use',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'member.created',
  'member.removed',
  'member.joined',
  'business.updated',
  'analytics.erased',
] as const
export type AuditAction = (typeof AUDIT_ACTIONS)[number]

/**
 * The audit trail: one row per change to a key or a member, written in the transaction of
 * the change itself (src/audit/trail.ts). Append-only: a trigger (migration 0002) refuses
 * every UPDATE and DELETE, whoever sends it. `changes` holds, for an update, each changed
 * field as {from, to}; never a key or its digest, nor a person's identifier (an erasure's
 * entry holds its id and count only). `actor`: "admin", "member:<email>", or "key:<id>" for
 * an erasure an API key asked for.
 */
export const auditEntries = pgTable(
  'audit_entries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    actor: text('actor').notNull(),
    action: text('action', { enum: AUDIT_ACTIONS }).notNull(),
    keyId: uuid('key_id').references(() => apiKeys.id),
    memberId: uuid('member_id'),
    requestId: text('request_id'),
    changes: jsonb('changes').notNull().default(sql`'{}'::jsonb`),
  },
  (table) => [
    index('audit_entries_business_idx').on(table.businessId, table.at, table.id),
    index('audit_entries_key_idx').on(table.keyId, table.at, table.id),
    check(
      'audit_entries_action_check',
      sql`${table.action} in ('key.created', 'key.updated', 'key.revoked', 'key.rolled', 'key.leaked', 'key.browser_use', 'webhook.created', 'webhook.updated', 'webhook.deleted', 'member.created', 'member.removed', 'member.joined', 'business.updated', 'analytics.erased')`,
    ),
  ],
)
