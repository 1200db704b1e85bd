import { and, desc, eq, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys, businesses } from '../../db/schema/index.ts'
import { generateKey, hashKey, keyHint, type KeyType } from '../access/key-format.ts'
import { storedRateLimit } from '../access/key-store.ts'
import { ApiError } from '../errors.ts'
import { checkKeySettings, type FieldProblem, type KeySettingsInput } from './rules.ts'
import type { KeyRecord } from '../admin/model.ts'

export type { KeyRecord }

export type ApiKeyRow = typeof apiKeys.$inferSelect

export function toKeyRecord(row: ApiKeyRow): KeyRecord {
  return {
    id: row.id,
    businessId: row.businessId,
    type: row.type,
    name: row.name,
    description: row.description,
    keyHint: row.keyHint,
    allowedOrigins: row.allowedOrigins,
    scopes: row.scopes,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy,
    updatedAt: row.updatedAt.toISOString(),
    revokedAt: row.revokedAt?.toISOString() ?? null,
    rateLimit: storedRateLimit(row),
  }
}

export interface NewKeyInput extends KeySettingsInput {
  type: KeyType
  name: string
  scopes: readonly string[]
  createdBy: string
}

/**
 * Key management shared by the admin API and the dashboard. Every change calls
 * `onChange(keyHash)` so this instance's key cache forgets the key at once.
 */
export function createKeyService(db: Db, onChange: (keyHash: string) => void) {
  async function findRow(businessId: string | null, keyId: string): Promise<ApiKeyRow> {
    const condition = businessId ? and(eq(apiKeys.id, keyId), eq(apiKeys.businessId, businessId)) : eq(apiKeys.id, keyId)
    const [row] = await db.select().from(apiKeys).where(condition).limit(1)
    if (!row) throw new ApiError('not_found', `No key with id ${keyId}.`)
    return row
  }

  return {
    async create(businessId: string, input: NewKeyInput, now = new Date()) {
      const [business] = await db.select({ id: businesses.id }).from(businesses).where(eq(businesses.id, businessId))
      if (!business) throw new ApiError('not_found', `No business with id ${businessId}.`)
      const checked = checkKeySettings(
        input.type,
        { ...input, allowedOrigins: input.allowedOrigins ?? [] },
        now,
      )
      if (!checked.ok) throw invalid(checked.problems)
      const key = generateKey(input.type)
      const { settings } = checked
      const [row] = await db
        .insert(apiKeys)
        .values({
          businessId,
          type: input.type,
          name: settings.name!,
          description: settings.description ?? null,
          keyHash: hashKey(key),
          keyHint: keyHint(key),
          publicKey: input.type === 'public' ? key : null,
          allowedOrigins: settings.allowedOrigins ?? [],
          scopes: settings.scopes!,
          expiresAt: settings.expiresAt ?? null,
          rateLimitLimit: settings.rateLimitLimit ?? null,
          rateLimitWindowSeconds: settings.rateLimitWindowSeconds ?? null,
          createdBy: input.createdBy,
        })
        .returning()
      onChange(row!.keyHash)
      return { record: toKeyRecord(row!), key }
    },

    async list(businessId: string): Promise<KeyRecord[]> {
      const rows = await db
        .select()
        .from(apiKeys)
        .where(eq(apiKeys.businessId, businessId))
        .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
      return rows.map(toKeyRecord)
    },

    /** `businessId` null: the operator's view, across businesses. */
    async get(businessId: string | null, keyId: string): Promise<ApiKeyRow> {
      return findRow(businessId, keyId)
    },

    async update(businessId: string | null, keyId: string, input: KeySettingsInput, now = new Date()) {
      const current = await findRow(businessId, keyId)
      if (current.revokedAt) {
        throw new ApiError('conflict', `Key ${keyId} is revoked; a revoked key cannot be changed. Create a new key instead.`)
      }
      const checked = checkKeySettings(current.type, input, now)
      if (!checked.ok) throw invalid(checked.problems)
      const [row] = await db
        .update(apiKeys)
        .set({ ...checked.settings, updatedAt: now })
        .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
        .returning()
      if (!row) throw new ApiError('conflict', `Key ${keyId} was revoked meanwhile; it was not changed.`)
      onChange(row.keyHash)
      return toKeyRecord(row)
    },

    /** Idempotent: revoking twice keeps the first revocation time. */
    async revoke(businessId: string | null, keyId: string, now = new Date()) {
      const current = await findRow(businessId, keyId)
      const [row] = await db
        .update(apiKeys)
        .set({ revokedAt: now, updatedAt: now })
        .where(and(eq(apiKeys.id, current.id), isNull(apiKeys.revokedAt)))
        .returning()
      onChange(current.keyHash)
      return toKeyRecord(row ?? current)
    },
  }
}

export type KeyService = ReturnType<typeof createKeyService>

function invalid(problems: FieldProblem[]): ApiError {
  return new ApiError('invalid_request', problems.map((p) => `${p.field}: ${p.message}`).join(' '))
}
