import { parseIpEntries } from '../access/allowed-ips.ts'
import { parseAllowedOrigins } from '../access/origin/index.ts'
import { isScope, PUBLIC_KEY_SCOPES, SCOPES, type Scope } from '../access/scopes.ts'
import type { KeyType } from '../access/key-format.ts'
import { DATE_RANGE_TEXT, isAcceptedDate, isStorableText } from '../shared/validation.ts'
import { hasCodePointsWithin } from '../shared/characters.ts'

/** A field-level problem with a key's settings, phrased for the person who can fix it. */
export interface FieldProblem {
  field: string
  message: string
}

export interface KeySettingsInput {
  name?: string
  description?: string | null
  allowedOrigins?: readonly string[]
  scopes?: readonly string[]
  expiresAt?: string | null
  rateLimit?: { limit: number; windowSeconds: number } | null
  /** Public keys: `report` serves and counts origins the list does not allow. */
  originPolicy?: OriginPolicy
  /** Private keys: client addresses and CIDR ranges allowed; empty: any. */
  allowedIps?: readonly string[]
  /** Private keys: `report` serves and counts addresses the list does not allow. */
  ipPolicy?: OriginPolicy
}

export const ORIGIN_POLICIES = ['enforce', 'report'] as const
export type OriginPolicy = (typeof ORIGIN_POLICIES)[number]

export interface KeySettings {
  name?: string
  description?: string | null
  allowedOrigins?: string[]
  scopes?: Scope[]
  expiresAt?: Date | null
  /** Both set or both null (null: the service default). */
  rateLimitLimit?: number | null
  rateLimitWindowSeconds?: number | null
  originPolicy?: OriginPolicy
  allowedIps?: string[]
  ipPolicy?: OriginPolicy
}

/**
 * The creation rules of keys (docs/api.md, "Keys"), shared by the admin API and the dashboard.
 * `input` holds the fields being set (all of them on create, the changed ones on update);
 * the result is the canonical settings to store, or every problem found.
 */
export function checkKeySettings(
  type: KeyType,
  input: KeySettingsInput,
  now: Date,
): { ok: true; settings: KeySettings } | { ok: false; problems: FieldProblem[] } {
  const problems: FieldProblem[] = []
  const settings: KeySettings = {}

  if (input.name !== undefined) {
    const name = input.name.trim()
    if (!hasCodePointsWithin(name, 1, 100)) {
      problems.push({ field: 'name', message: 'name must be 1 to 100 characters (not only spaces).' })
    } else if (!isStorableText(name)) {
      problems.push({ field: 'name', message: 'name must not contain U+0000 or a lone UTF-16 surrogate.' })
    } else settings.name = name
  }

  if (input.description !== undefined) {
    const description = input.description?.trim() || null
    if (description !== null && !hasCodePointsWithin(description, 0, 1000)) {
      problems.push({ field: 'description', message: 'description must be at most 1000 characters.' })
    } else if (description !== null && !isStorableText(description)) {
      problems.push({ field: 'description', message: 'description must not contain U+0000 or a lone UTF-16 surrogate.' })
    } else settings.description = description
  }

  if (input.scopes !== undefined) {
    const scopes = [...new Set(input.scopes)]
    if (scopes.length === 0) {
      problems.push({ field: 'scopes', message: `scopes needs at least one of: ${SCOPES.join(', ')}.` })
    }
    for (const scope of scopes) {
      if (scope === 'ALL') {
        problems.push({
          field: 'scopes',
          message: 'scope ALL does not exist: list the scopes the key needs explicitly.',
        })
      } else if (!isScope(scope)) {
        problems.push({
          field: 'scopes',
          message: `"${scope}" is not a scope. Use any of: ${SCOPES.join(', ')}.`,
        })
      } else if (type === 'public' && !PUBLIC_KEY_SCOPES.includes(scope)) {
        problems.push({
          field: 'scopes',
          message: `A public key cannot hold ${scope}: no public endpoint uses it. Public keys may hold ${PUBLIC_KEY_SCOPES.join(', ')}; use a private key for ${scope}.`,
        })
      }
    }
    if (scopes.length > 0) settings.scopes = scopes.filter(isScope)
  }

  if (input.allowedOrigins !== undefined) {
    if (type === 'private') {
      if (input.allowedOrigins.length > 0) {
        problems.push({
          field: 'allowedOrigins',
          message:
            'A private key takes no allowed origins: it is used from servers, which send no Origin. Leave allowedOrigins empty, or create a public key for browsers.',
        })
      } else settings.allowedOrigins = []
    } else if (input.allowedOrigins.length === 0) {
      problems.push({
        field: 'allowedOrigins',
        message: 'A public key needs at least one allowed origin, e.g. "example.com", "https://app.example.com" or "localhost:3000".',
      })
    } else {
      const parsed = parseAllowedOrigins(input.allowedOrigins)
      if (parsed.ok) settings.allowedOrigins = parsed.entries
      else {
        for (const e of parsed.errors) {
          // The reason names the entry itself: prefixing it again said it twice.
          problems.push({ field: `allowedOrigins[${e.index}]`, message: e.reason })
        }
      }
    }
  }

  if (input.expiresAt !== undefined) {
    if (input.expiresAt === null) settings.expiresAt = null
    else {
      const at = new Date(input.expiresAt)
      if (Number.isNaN(at.getTime())) {
        problems.push({ field: 'expiresAt', message: 'expiresAt must be an ISO-8601 date-time, e.g. 2027-01-31T00:00:00Z.' })
      } else if (!isAcceptedDate(at)) {
        problems.push({
          field: 'expiresAt',
          message: `expiresAt ${input.expiresAt.slice(0, 40)} is outside the accepted range, ${DATE_RANGE_TEXT}.`,
        })
      } else if (at.getTime() <= now.getTime()) {
        problems.push({
          field: 'expiresAt',
          message: `expiresAt ${at.toISOString()} is not in the future; give a later date or leave it out for a key that does not expire.`,
        })
      } else settings.expiresAt = at
    }
  }

  if (input.rateLimit !== undefined) {
    const budget = input.rateLimit
    if (budget === null) {
      settings.rateLimitLimit = null
      settings.rateLimitWindowSeconds = null
    } else if (!Number.isInteger(budget.limit) || budget.limit < 1 || budget.limit > 1_000_000) {
      problems.push({ field: 'rateLimit.limit', message: 'rateLimit.limit must be a whole number of requests from 1 to 1000000.' })
    } else if (!Number.isInteger(budget.windowSeconds) || budget.windowSeconds < 1 || budget.windowSeconds > 86_400) {
      problems.push({
        field: 'rateLimit.windowSeconds',
        message: 'rateLimit.windowSeconds must be a whole number of seconds from 1 to 86400 (one day).',
      })
    } else {
      settings.rateLimitLimit = budget.limit
      settings.rateLimitWindowSeconds = budget.windowSeconds
    }
  }

  if (input.originPolicy !== undefined) {
    if (!ORIGIN_POLICIES.includes(input.originPolicy)) {
      problems.push({
        field: 'originPolicy',
        message: 'originPolicy must be "enforce" (refuse other origins) or "report" (serve and count them).',
      })
    } else if (type === 'private' && input.originPolicy !== 'enforce') {
      problems.push({
        field: 'originPolicy',
        message: 'originPolicy "report" is for public keys: a private key has no allowed origins to report on.',
      })
    } else settings.originPolicy = input.originPolicy
  }

  if (input.allowedIps !== undefined) {
    if (type === 'public' && input.allowedIps.length > 0) {
      problems.push({
        field: 'allowedIps',
        message:
          'A public key takes no allowed IPs: browsers call from anywhere, so a public key is restricted by its allowed origins. Leave allowedIps empty, or use a private key from your servers.',
      })
    } else {
      const parsed = parseIpEntries(input.allowedIps)
      if (parsed.ok) settings.allowedIps = parsed.entries
      else for (const e of parsed.errors) problems.push({ field: `allowedIps[${e.index}]`, message: e.reason })
    }
  }

  if (input.ipPolicy !== undefined) {
    if (!ORIGIN_POLICIES.includes(input.ipPolicy)) {
      problems.push({
        field: 'ipPolicy',
        message: 'ipPolicy must be "enforce" (refuse other addresses) or "report" (serve and count them).',
      })
    } else if (type === 'public' && input.ipPolicy !== 'enforce') {
      problems.push({
        field: 'ipPolicy',
        message: 'ipPolicy "report" is for private keys: a public key has no allowed IPs to report on.',
      })
    } else settings.ipPolicy = input.ipPolicy
  }

  return problems.length ? { ok: false, problems } : { ok: true, settings }
}
