import { t } from 'elysia'
import { ScopeName } from '../access/scopes.ts'
import { BodyInteger } from '../shared/strict-number.ts'

export { IdParams } from '../shared/uuid.ts'

export const NewBusiness = t.Object({ name: t.String({ minLength: 1, maxLength: 200, description: '1-200 characters.' }) })

/** A key's own budget (contract section 8); null: the service default for its type. */
function RateLimit() {
  return t.Object(
    {
      limit: BodyInteger({
        minimum: 1,
        maximum: 1_000_000,
        error: 'must be a whole number of requests from 1 to 1000000',
      }),
      windowSeconds: BodyInteger({
        minimum: 1,
        maximum: 86_400,
        error: 'must be a whole number of seconds from 1 to 86400 (one day)',
      }),
    },
    {
      description:
        'At most `limit` requests per `windowSeconds`, sliding (GCRA): per client address for public keys, per key for private keys. null: the service default (RATE_LIMIT_PUBLIC / RATE_LIMIT_PRIVATE).',
    },
  )
}

const OriginPolicySchema = t.Union([t.Literal('enforce'), t.Literal('report')], {
  error: 'must be "enforce" (refuse origins the list does not allow) or "report" (serve and count them)',
  description: 'Public keys: "report" serves origins the list does not allow and counts them (contract section 11).',
})

const IpPolicySchema = t.Union([t.Literal('enforce'), t.Literal('report')], {
  error: 'must be "enforce" (refuse addresses the list does not allow) or "report" (serve and count them)',
  description: 'Private keys: "report" serves client addresses outside allowedIps and counts them (contract section 14).',
})

const AllowedIps = t.Array(
  t.String({ maxLength: 60, description: 'An IPv4 or IPv6 address or CIDR range, e.g. 203.0.113.7, 198.51.100.0/24, 2001:db8::/48.' }),
  {
    maxItems: 100,
    description: 'Private keys: the client addresses allowed (contract section 14), stored canonical. Empty: any address.',
  },
)

export const RollKey = t.Object({
  graceSeconds: t.Optional(
    BodyInteger({
      minimum: 0,
      maximum: 604_800,
      error: 'must be a whole number of seconds from 0 (end the old key now) to 604800 (7 days)',
      description: 'How long the old key keeps working, 0-604800 s (default 86400).',
    }),
  ),
})

const keySettings = {
  name: t.String({ maxLength: 100, description: '1-100 characters (trimmed).' }),
  description: t.Optional(t.Nullable(t.String({ maxLength: 1000, description: 'At most 1000 characters.' }))),
  allowedOrigins: t.Optional(
    t.Array(t.String({ maxLength: 300, description: 'At most 300 characters.' }), { maxItems: 100, description: 'At most 100 entries.' }),
  ),
  scopes: t.Array(ScopeName, { maxItems: 20 }),
  expiresAt: t.Optional(t.Nullable(t.String({ format: 'date-time', error: 'must be an ISO-8601 date-time' }))),
  rateLimit: t.Optional(
    t.Nullable(RateLimit(), {
      error: 'must be {"limit": 1-1000000, "windowSeconds": 1-86400} in whole numbers, or null for the service default',
    }),
  ),
  originPolicy: t.Optional(OriginPolicySchema),
  allowedIps: t.Optional(AllowedIps),
  ipPolicy: t.Optional(IpPolicySchema),
}

export const NewKey = t.Object({
  type: t.Union([t.Literal('public'), t.Literal('private')], { error: 'must be "public" or "private"' }),
  ...keySettings,
  createdBy: t.String({ minLength: 1, maxLength: 200, description: 'Who asked for the key, 1-200 characters.' }),
})

export const KeyChanges = t.Partial(t.Object(keySettings), { minProperties: 1 })

export const BusinessRecordSchema = t.Object({ id: t.String(), name: t.String(), createdAt: t.String() })
export type BusinessRecord = typeof BusinessRecordSchema.static
export type Business = BusinessRecord

export const FlowRecord = t.Object({ id: t.String(), businessId: t.String(), name: t.String(), createdAt: t.String() })

export const NewFlow = t.Object({ name: t.String({ minLength: 1, maxLength: 200, description: '1-200 characters.' }) })

export const KeyRecordSchema = t.Object(
  {
    id: t.String(),
    businessId: t.String(),
    type: t.Union([t.Literal('public'), t.Literal('private')]),
    name: t.String(),
    description: t.Nullable(t.String()),
    keyHint: t.String(),
    allowedOrigins: t.Array(t.String()),
    scopes: t.Array(ScopeName),
    expiresAt: t.Nullable(t.String()),
    lastUsedAt: t.Nullable(t.String()),
    createdAt: t.String(),
    createdBy: t.String(),
    updatedAt: t.String(),
    revokedAt: t.Nullable(t.String()),
    rateLimit: t.Nullable(RateLimit()),
    originPolicy: OriginPolicySchema,
    allowedIps: AllowedIps,
    ipPolicy: IpPolicySchema,
    rolledFrom: t.Nullable(t.String({ description: 'The key this one replaced by a roll.' })),
    replacedBy: t.Nullable(t.String({ description: 'The key that replaced this one; it works until expiresAt.' })),
  },
  { description: 'An API key. The key itself appears only once, as `key`, in the create answer.' },
)

/** The key record on the wire (contract section 2); never carries the key itself. */
export type KeyRecord = typeof KeyRecordSchema.static

/** The create and roll answers: the record and, this once, the key itself. */
export const RevealedKeySchema = t.Composite([KeyRecordSchema, t.Object({ key: t.String() })])

export function revealedKey(made: { record: KeyRecord; key: string }): typeof RevealedKeySchema.static {
  return { ...made.record, key: made.key }
}

export type Flow = typeof FlowRecord.static
export type NewKeyBody = typeof NewKey.static
export type KeyChangesBody = typeof KeyChanges.static
