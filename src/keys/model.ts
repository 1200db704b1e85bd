import { t } from 'elysia'
import { ScopeName } from '../access/scopes.ts'
import { BodyInteger } from '../shared/strict-number.ts'

/**
 * A key on the wire: the record the admin API and the dashboard show,
 * and the settings a key's body may carry. The admin API's bodies (src/admin/model.ts) are
 * built from these parts.
 */

/** A key's own budget; null: the service default for its type. */
export function RateLimit() {
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
        'At most `limit` requests per `windowSeconds`, sliding (GCRA): per client address for public keys (and 100 times that from all their visitors together), per key for private keys. null: the service default (RATE_LIMIT_PUBLIC / RATE_LIMIT_PRIVATE).',
    },
  )
}

export const OriginPolicySchema = t.Union([t.Literal('enforce'), t.Literal('report')], {
  error: 'must be "enforce" (refuse origins the list does not allow) or "report" (serve and count them)',
  description: 'Public keys: "report" serves origins the list does not allow and counts them.',
})

export const IpPolicySchema = t.Union([t.Literal('enforce'), t.Literal('report')], {
  error: 'must be "enforce" (refuse addresses the list does not allow) or "report" (serve and count them)',
  description: 'Private keys: "report" serves client addresses outside allowedIps and counts them.',
})

export const AllowedIps = t.Array(
  t.String({ maxLength: 60, description: 'An IPv4 or IPv6 address or CIDR range, e.g. 203.0.113.7, 198.51.100.0/24, 2001:db8::/48.' }),
  {
    maxItems: 100,
    description: 'Private keys: the client addresses allowed, stored canonical. Empty: any address.',
  },
)

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
    leak: t.Nullable(
      t.Object(
        {
          reportedAt: t.String(),
          url: t.Nullable(t.String()),
          source: t.String({ description: 'GitHub\'s source (content, commit, gist, npm...), or "report" for /security/leaked-keys' }),
          action: t.Union([t.Literal('revoked'), t.Literal('notified')]),
        },
        { description: 'Where the key was found in a public place, and what the service did (LEAKED_KEY_POLICY); null: never reported.' },
      ),
    ),
  },
  { description: 'An API key. The key itself appears only once, as `key`, in the create answer.' },
)

/** The key record on the wire; never carries the key itself. */
export type KeyRecord = typeof KeyRecordSchema.static
