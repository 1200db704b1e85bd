import { t } from 'elysia'
import { ScopeName } from '../access/scopes.ts'
import { BodyInteger } from '../shared/strict-number.ts'
import { AllowedIps, IpPolicySchema, KeyRecordSchema, OriginPolicySchema, RateLimit, type KeyRecord } from '../keys/model.ts'

import { Uuid } from '../shared/uuid.ts'
import { Chars } from '../shared/characters.ts'

export { IdParams } from '../shared/uuid.ts'

export const NewBusiness = t.Object({ name: Chars({ minLength: 1, maxLength: 200, description: '1-200 characters.' }) })

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
  name: Chars({ maxLength: 100, description: '1-100 characters (trimmed).' }),
  description: t.Optional(t.Nullable(Chars({ maxLength: 1000, description: 'At most 1000 characters.' }))),
  allowedOrigins: t.Optional(
    t.Array(Chars({ maxLength: 300, description: 'At most 300 characters.' }), { maxItems: 100, description: 'At most 100 entries.' }),
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
  createdBy: Chars({ minLength: 1, maxLength: 200, description: 'Who asked for the key, 1-200 characters.' }),
})

export const KeyChanges = t.Partial(t.Object(keySettings), { minProperties: 1 })

export const BusinessRecordSchema = t.Object({
  id: t.String(),
  name: t.String(),
  createdAt: t.String(),
  eventRetentionDays: t.Nullable(t.Integer(), {
    description: "The business's own event retention in days; null: the operator's EVENT_RETENTION_DAYS.",
  }),
  effectiveEventRetentionDays: t.Integer({
    description: "How many days its events are kept now: its own setting, capped by the operator's.",
  }),
})

export const BusinessChanges = t.Object(
  {
    name: t.Optional(Chars({ minLength: 1, maxLength: 200, description: '1-200 characters.' })),
    eventRetentionDays: t.Optional(
      t.Nullable(
        BodyInteger({
          minimum: 1,
          maximum: 36_500,
          error: "must be a whole number of days from 1 to the operator's EVENT_RETENTION_DAYS, or null for the operator's value",
        }),
        { error: "must be a whole number of days from 1 to the operator's EVENT_RETENTION_DAYS, or null for the operator's value" },
      ),
    ),
  },
  { minProperties: 1 },
)
export type BusinessChangesBody = typeof BusinessChanges.static

/** `/businesses/:id/erasures/:erasureId`. */
export const ErasureParams = t.Object({ id: Uuid, erasureId: Uuid })
export type BusinessRecord = typeof BusinessRecordSchema.static
export type Business = BusinessRecord

export const NewFlow = t.Object({ name: Chars({ minLength: 1, maxLength: 200, description: '1-200 characters.' }) })

/** The create and roll answers: the record and, this once, the key itself. */
export const RevealedKeySchema = t.Composite([KeyRecordSchema, t.Object({ key: t.String() })])

export function revealedKey(made: { record: KeyRecord; key: string }): typeof RevealedKeySchema.static {
  return { ...made.record, key: made.key }
}

export type NewKeyBody = typeof NewKey.static
export type KeyChangesBody = typeof KeyChanges.static
