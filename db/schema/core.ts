import { sql } from 'drizzle-orm'
import { check, foreignKey, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * `identitySecret`: the key of the HMAC a business's server computes over a person's
 * identifier so that its pages may update that person with a public key (docs/api.md,
 * "Writes with a public key"). Shown once when set; null: public-key people writes are create-only.
 * `eventRetentionDays`: how long the business's events are kept,
 * 1 to the operator's EVENT_RETENTION_DAYS; null: the operator's value.
 * `eventsExpiredBefore`: events that happened before it are gone for good, whatever the
 * retention says later (docs/decisions.md, "A lowered retention is final"). Set by each
 * change of the retention to where the old one reached, it only moves forward; null: never changed.
 */
export const businesses = pgTable('businesses', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  identitySecret: text('identity_secret'),
  eventRetentionDays: integer('event_retention_days'),
  eventsExpiredBefore: timestamp('events_expired_before', { withTimezone: true, precision: 3 }),
})

/**
 * API keys. The plaintext of a key is never stored: requests are matched on `keyHash`,
 * the hex SHA-256 of the whole key (`pk_...`/`sk_...`). `publicKey` keeps the plaintext
 * of public keys only, which are not secret, so that the dashboard can show them again to
 * members of their own business; it is always null for private keys (a CHECK pins that).
 * `keyHint` is the redacted form shown in lists (`sk_…wxyz`).
 * `lastUsedAt` moves only forward, at most once a minute per key, by one guarded UPDATE
 * (src/access/last-used.ts). A revoked key keeps its row: `revokedAt` is set once.
 * `rateLimitLimit`/`rateLimitWindowSeconds` are the key's own budget,
 * both set or both null (null: the service default for the key's type).
 * Every insert, update or delete notifies channel `keygate_api_keys` with the key's
 * digest (a trigger in migration 0001), so every instance's key cache forgets it at once.
 * Rolling links the two keys both ways: the new one's `rolledFrom`,
 * the old one's `replacedBy` (set once; its `expiresAt` then holds the end of the grace).
 * `originPolicy` `report` (public keys): an Origin the list does not allow is served and
 * counted instead of refused.
 * `allowedIps` (private keys, canonical addresses and CIDR ranges; empty: any address) and
 * `ipPolicy` `report`: serve and count addresses outside the list.
 * `leak`: the first report of the key in a public place (src/leaks/respond.ts), null
 * otherwise; set once. `leakDismissedAt`: a member dismissed the dashboard's banner about it.
 */
/** Where a key was found and what the service did (docs/api.md, "When a key leaks"). */
export interface KeyLeak {
  reportedAt: string
  /** Where it was found, as the reporter said (GitHub: the file or gist). */
  url: string | null
  /** GitHub's source (`content`, `commit`, `pull_request`, `gist`, `npm`...), or `report` for a report to /security/leaked-keys. */
  source: string
  action: 'revoked' | 'notified'
}

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    type: text('type', { enum: ['public', 'private'] }).notNull(),
    name: text('name').notNull(),
    description: text('description'),
    keyHash: text('key_hash').notNull().unique(),
    keyHint: text('key_hint').notNull(),
    publicKey: text('public_key'),
    allowedOrigins: text('allowed_origins').array().notNull().default(sql`'{}'::text[]`),
    scopes: text('scopes').array().notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    createdBy: text('created_by').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    rateLimitLimit: integer('rate_limit_limit'),
    rateLimitWindowSeconds: integer('rate_limit_window_seconds'),
    originPolicy: text('origin_policy', { enum: ['enforce', 'report'] })
      .notNull()
      .default('enforce'),
    allowedIps: text('allowed_ips').array().notNull().default(sql`'{}'::text[]`),
    ipPolicy: text('ip_policy', { enum: ['enforce', 'report'] })
      .notNull()
      .default('enforce'),
    rolledFrom: uuid('rolled_from'),
    replacedBy: uuid('replaced_by'),
    leak: jsonb('leak').$type<KeyLeak>(),
    leakDismissedAt: timestamp('leak_dismissed_at', { withTimezone: true }),
  },
  (table) => [
    foreignKey({ columns: [table.rolledFrom], foreignColumns: [table.id], name: 'api_keys_rolled_from_fk' }),
    foreignKey({ columns: [table.replacedBy], foreignColumns: [table.id], name: 'api_keys_replaced_by_fk' }),
    check('api_keys_origin_policy_check', sql`${table.originPolicy} in ('enforce', 'report')`),
    check('api_keys_report_public_only', sql`${table.originPolicy} = 'enforce' or ${table.type} = 'public'`),
    check('api_keys_ip_policy_check', sql`${table.ipPolicy} in ('enforce', 'report')`),
    check('api_keys_ips_private_only', sql`cardinality(${table.allowedIps}) = 0 or ${table.type} = 'private'`),
    index('api_keys_business_idx').on(table.businessId, table.createdAt),
    check('api_keys_type_check', sql`${table.type} in ('public', 'private')`),
    check('api_keys_plaintext_public_only', sql`${table.publicKey} is null or ${table.type} = 'public'`),
    check(
      'api_keys_rate_limit_check',
      sql`(${table.rateLimitLimit} is null and ${table.rateLimitWindowSeconds} is null) or (${table.rateLimitLimit} between 1 and 1000000 and ${table.rateLimitWindowSeconds} between 1 and 86400)`,
    ),
  ],
)
