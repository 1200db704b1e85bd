import { sql } from 'drizzle-orm'
import { bigint, boolean, check, index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './core.ts'

/**
 * Requests per key, counted in memory on the request path and added
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
 * were served anyway (`reported`: the key's originPolicy was `report`). At most
 * REFUSALS_KEPT_PER_HOUR rows per key and hour (src/usage/recorder.ts): the most frequent;
 * the count of the others is in `key_refused_others`.
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
    // A flush merges into one key-hour at a time, and the report reads one key's hours.
    index('key_refused_origins_key_hour_idx').on(table.keyId, table.hour),
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
 * Client addresses a private key's allowedIps did not allow, kept
 * like refused origins: per key, address and hour, `reported` when served anyway
 * (ipPolicy `report`), at most REFUSALS_KEPT_PER_HOUR per key and hour.
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
    index('key_refused_ips_key_hour_idx').on(table.keyId, table.hour),
  ],
)

/**
 * Per key and hour, the refusals not kept by name in key_refused_origins (`kind` origin)
 * or key_refused_ips (`kind` ip): those beyond the rows kept, and those a flush's summary
 * could not name for certain. Each flush locks its key-hours' rows here first, which
 * keeps instances from merging into one key-hour at once (src/usage/recorder.ts).
 */
export const keyRefusedOthers = pgTable(
  'key_refused_others',
  {
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    kind: text('kind').notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.keyId, table.hour, table.kind] }),
    index('key_refused_others_hour_idx').on(table.hour),
    check('key_refused_others_kind_check', sql`${table.kind} in ('origin', 'ip')`),
  ],
)
