import { bigint, boolean, index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './core.ts'

/**
 * Requests per key (contract section 11), counted in memory on the request path and added
 * here in batches (src/usage/recorder.ts): one row per key, period start and outcome
 * (`accepted`, or the error code the request was answered with). Each flush adds to the
 * minute, the hour and the day at once, so reads at any interval are one range scan and
 * no roll-up job is needed; instances add to the same rows, which sums them. A retention
 * job drops minutes after 2 days, hours after 35 days, days after 400 days.
 */
function usageTable<N extends string>(name: N) {
  return pgTable(
    name,
    {
      keyId: uuid('key_id')
        .notNull()
        .references(() => apiKeys.id),
      at: timestamp('at', { withTimezone: true }).notNull(),
      outcome: text('outcome').notNull(),
      count: bigint('count', { mode: 'number' }).notNull(),
    },
    (table) => [primaryKey({ columns: [table.keyId, table.at, table.outcome] }), index(`${name}_at_idx`).on(table.at)],
  )
}

export const keyUsageMinutes = usageTable('key_usage_minutes')
export const keyUsageHours = usageTable('key_usage_hours')
export const keyUsageDays = usageTable('key_usage_days')

/**
 * Origins a public key's list did not allow, per key, origin and hour, with whether they
 * were served anyway (`reported`: the key's originPolicy was `report`).
 */
export const keyRefusedOrigins = pgTable(
  'key_refused_origins',
  {
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    origin: text('origin').notNull(),
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    reported: boolean('reported').notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.keyId, table.origin, table.hour, table.reported] }),
    index('key_refused_origins_hour_idx').on(table.hour),
  ],
)

/** When each key last used each of its scopes: for "unused for 30 days" hints. */
export const keyScopeUses = pgTable(
  'key_scope_uses',
  {
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    scope: text('scope').notNull(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }).notNull(),
  },
  (table) => [primaryKey({ columns: [table.keyId, table.scope] })],
)

/**
 * Client addresses a private key's allowedIps did not allow (contract section 14), kept
 * like refused origins: per key, address and hour, `reported` when served anyway
 * (ipPolicy `report`).
 */
export const keyRefusedIps = pgTable(
  'key_refused_ips',
  {
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    ip: text('ip').notNull(),
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    reported: boolean('reported').notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.keyId, table.ip, table.hour, table.reported] }),
    index('key_refused_ips_hour_idx').on(table.hour),
  ],
)
