import { and, desc, eq, isNotNull, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys, businesses } from '../../db/schema/index.ts'
import { generateKey, hashKey, keyHint, type KeyType } from '../access/key-format.ts'
import { storedRateLimit } from '../access/key-store.ts'
import { ApiError } from '../errors.ts'
import { listAdminPage, type AdminPage, type Page } from '../shared/paging.ts'
import { changedFields, recordChange, type ChangeAuthor, type FieldChanges } from '../audit/trail.ts'
import { recordWebhookEvent } from '../webhooks/outbox.ts'
import { checkKeySettings, type FieldProblem, type KeySettingsInput } from './rules.ts'
import type { KeyRecord } from './model.ts'

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
    originPolicy: row.originPolicy,
    allowedIps: row.allowedIps,
    ipPolicy: row.ipPolicy,
    rolledFrom: row.rolledFrom,
    replacedBy: row.replacedBy,
    leak: row.leak ?? null,
  }
}

export interface NewKeyInput extends KeySettingsInput {
  type: KeyType
  name: string
  scopes: readonly string[]
  createdBy: string
}

/** The fields of a key a change can touch, as the trail shows them. */
export const AUDITED_FIELDS = [
  'name',
  'description',
  'allowedOrigins',
  'scopes',
  'expiresAt',
  'rateLimit',
  'originPolicy',
  'allowedIps',
  'ipPolicy',
  'replacedBy',
  'revokedAt',
] as const satisfies readonly (keyof KeyRecord)[]

/** The default grace of a roll: a day to deploy the new key. */
export const DEFAULT_ROLL_GRACE_SECONDS = 86_400

/**
 * Key management shared by the admin API and the dashboard. Every change runs in one
 * transaction with its audit entry (src/audit/trail.ts), then calls `onChange(keyHash)` so
 * this instance's key cache forgets the key at once (other instances hear the trigger's
 * notification).
 */
export function createKeyService(db: Db, onChange: (keyHash: string) => void) {
  async function findRow(businessId: string | null, keyId: string, on: Db = db, lock = false): Promise<ApiKeyRow> {
    const condition = businessId ? and(eq(apiKeys.id, keyId), eq(apiKeys.businessId, businessId)) : eq(apiKeys.id, keyId)
    const query = on.select().from(apiKeys).where(condition).limit(1)
    const [row] = lock ? await query.for('update') : await query
    if (!row) throw new ApiError('not_found', `No key with id ${keyId}.`)
    return row
  }

  async function insertKey(
    tx: Db,
    businessId: string,
    type: KeyType,
    values: Omit<typeof apiKeys.$inferInsert, 'businessId' | 'type' | 'keyHash' | 'keyHint' | 'publicKey'>,
  ) {
    const key = generateKey(type)
    const [row] = await tx
      .insert(apiKeys)
      .values({
        ...values,
        businessId,
        type,
        keyHash: hashKey(key),
        keyHint: keyHint(key),
        publicKey: type === 'public' ? key : null,
      })
      .returning()
    return { row: row!, key }
  }

  return {
    async create(businessId: string, input: NewKeyInput, by: ChangeAuthor, now = new Date()) {
      const [business] = await db.select({ id: businesses.id }).from(businesses).where(eq(businesses.id, businessId))
      if (!business) throw new ApiError('not_found', `No business with id ${businessId}.`)
      const checked = checkKeySettings(input.type, { ...input, allowedOrigins: input.allowedOrigins ?? [] }, now)
      if (!checked.ok) throw invalid(checked.problems)
      const { settings } = checked
      const created = await db.transaction(async (tx) => {
        const made = await insertKey(tx, businessId, input.type, {
          name: settings.name!,
          description: settings.description ?? null,
          allowedOrigins: settings.allowedOrigins ?? [],
          scopes: settings.scopes!,
          expiresAt: settings.expiresAt ?? null,
          rateLimitLimit: settings.rateLimitLimit ?? null,
          rateLimitWindowSeconds: settings.rateLimitWindowSeconds ?? null,
          originPolicy: settings.originPolicy ?? 'enforce',
          allowedIps: settings.allowedIps ?? [],
          ipPolicy: settings.ipPolicy ?? 'enforce',
          createdBy: input.createdBy,
        })
        await recordChange(tx, { businessId, action: 'key.created', by, keyId: made.row.id, changes: creation(made.row) })
        await recordWebhookEvent(tx, { businessId, type: 'key.created', payload: keyEvent(made.row) })
        return made
      })
      onChange(created.row.keyHash)
      return { record: toKeyRecord(created.row), key: created.key }
    },

    async list(businessId: string): Promise<KeyRecord[]> {
      const rows = await db
        .select()
        .from(apiKeys)
        .where(eq(apiKeys.businessId, businessId))
        .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
      return rows.map(toKeyRecord)
    },

    /** One page of `list`, for the admin API. */
    listPage(businessId: string, page: AdminPage): Promise<Page<KeyRecord>> {
      return listAdminPage(db, apiKeys, eq(apiKeys.businessId, businessId), page, toKeyRecord)
    },

    /** `businessId` null: the operator's view, across businesses. */
    async get(businessId: string | null, keyId: string): Promise<ApiKeyRow> {
      return findRow(businessId, keyId)
    },

    async update(businessId: string | null, keyId: string, input: KeySettingsInput, by: ChangeAuthor, now = new Date()) {
      const current = await findRow(businessId, keyId)
      if (current.revokedAt) {
        throw new ApiError('conflict', `Key ${keyId} is revoked; a revoked key cannot be changed. Create a new key instead.`)
      }
      const checked = checkKeySettings(current.type, input, now)
      if (!checked.ok) throw invalid(checked.problems)
      const row = await db.transaction(async (tx) => {
        const [changed] = await tx
          .update(apiKeys)
          .set({ ...checked.settings, updatedAt: now })
          .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
          .returning()
        if (!changed) throw new ApiError('conflict', `Key ${keyId} was revoked meanwhile; it was not changed.`)
        const changes = changedFields(toKeyRecord(current), toKeyRecord(changed), AUDITED_FIELDS)
        // A change that changes nothing is no change: the trail records what moved.
        if (Object.keys(changes).length > 0) {
          await recordChange(tx, { businessId: changed.businessId, action: 'key.updated', by, keyId, changes })
        }
        return changed
      })
      onChange(row.keyHash)
      return toKeyRecord(row)
    },

    /** Idempotent: revoking twice keeps the first revocation time (and records it once). */
    async revoke(businessId: string | null, keyId: string, by: ChangeAuthor, now = new Date()) {
      const current = await findRow(businessId, keyId)
      const row = await db.transaction(async (tx) => {
        const [revoked] = await tx
          .update(apiKeys)
          .set({ revokedAt: now, updatedAt: now })
          .where(and(eq(apiKeys.id, current.id), isNull(apiKeys.revokedAt)))
          .returning()
        if (revoked) {
          await recordChange(tx, {
            businessId: revoked.businessId,
            action: 'key.revoked',
            by,
            keyId,
            changes: changedFields(toKeyRecord(current), toKeyRecord(revoked), AUDITED_FIELDS),
          })
          await recordWebhookEvent(tx, { businessId: revoked.businessId, type: 'key.revoked', payload: keyEvent(revoked) })
        }
        return revoked
      })
      onChange(current.keyHash)
      return toKeyRecord(row ?? current)
    },

    /**
     * A new key with the old one's settings; the old one keeps working
     * until `now + graceSeconds` (or its own earlier expiry), then is refused as expired.
     * The old row is locked for the transaction, so two rolls of one key cannot both win.
     */
    async roll(businessId: string | null, keyId: string, graceSeconds: number, by: ChangeAuthor, now = new Date()) {
      return rollKey(businessId, keyId, by, now, (old) => {
        const refusal = rollRefusal(old, now)
        if (refusal) throw new ApiError('conflict', refusal)
        const graceEnd = new Date(now.getTime() + graceSeconds * 1000)
        return { expiresAt: old.expiresAt && old.expiresAt < graceEnd ? old.expiresAt : graceEnd }
      })
    },

    /**
     * The banner's one-click roll of a key reported leaked (docs/api.md, "When a key leaks"):
     * a new key with its settings, and the old one ended at once, already revoked or not (a
     * leaked key gets no grace). The banner about it goes, as the member has acted.
     */
    async rollLeaked(businessId: string, keyId: string, by: ChangeAuthor, now = new Date()) {
      return rollKey(businessId, keyId, by, now, (old) => {
        if (old.leak === null) throw new ApiError('conflict', `Key ${keyId} was not reported leaked; roll it as any key.`)
        if (old.replacedBy) throw new ApiError('conflict', `Key ${keyId} was already rolled: it is replaced by ${old.replacedBy}.`)
        if (old.expiresAt !== null && old.expiresAt <= now) {
          throw new ApiError('conflict', `Key ${keyId} has expired; an expired key cannot be rolled. Create a new key instead.`)
        }
        // A revoked key stays revoked; one kept working (LEAKED_KEY_POLICY=notify) ends now.
        return { leakDismissedAt: now, ...(old.revokedAt === null ? { expiresAt: now } : {}) }
      })
    },

    /** Takes the banner about a leaked key off every member's pages; false when the key has no leak shown. */
    async dismissLeak(businessId: string, keyId: string, now = new Date()): Promise<boolean> {
      const dismissed = await db
        .update(apiKeys)
        .set({ leakDismissedAt: now })
        .where(and(eq(apiKeys.id, keyId), eq(apiKeys.businessId, businessId), isNotNull(apiKeys.leak), isNull(apiKeys.leakDismissedAt)))
        .returning({ id: apiKeys.id })
      return dismissed.length > 0
    },
  }

  /**
   * One roll: `retire` checks the old row (locked) and says what to change on it beside
   * `replacedBy`; a new key takes its settings, and the trail records both.
   */
  async function rollKey(
    businessId: string | null,
    keyId: string,
    by: ChangeAuthor,
    now: Date,
    retire: (old: ApiKeyRow) => Partial<Pick<ApiKeyRow, 'expiresAt' | 'leakDismissedAt'>>,
  ) {
    const rolled = await db.transaction(async (tx) => {
      const old = await findRow(businessId, keyId, tx, true)
      const change = retire(old)
      const made = await insertKey(tx, old.businessId, old.type, {
        name: old.name,
        description: old.description,
        allowedOrigins: old.allowedOrigins,
        scopes: old.scopes,
        expiresAt: old.expiresAt,
        rateLimitLimit: old.rateLimitLimit,
        rateLimitWindowSeconds: old.rateLimitWindowSeconds,
        originPolicy: old.originPolicy,
        allowedIps: old.allowedIps,
        ipPolicy: old.ipPolicy,
        createdBy: old.createdBy,
        rolledFrom: old.id,
      })
      const [replaced] = await tx
        .update(apiKeys)
        .set({ ...change, replacedBy: made.row.id, updatedAt: now })
        .where(eq(apiKeys.id, old.id))
        .returning()
      await recordChange(tx, {
        businessId: old.businessId,
        action: 'key.rolled',
        by,
        keyId: old.id,
        changes: changedFields(toKeyRecord(old), toKeyRecord(replaced!), AUDITED_FIELDS),
      })
      await recordChange(tx, {
        businessId: old.businessId,
        action: 'key.created',
        by,
        keyId: made.row.id,
        changes: { ...creation(made.row), rolledFrom: { from: null, to: old.id } },
      })
      await recordWebhookEvent(tx, { businessId: old.businessId, type: 'key.rolled', payload: keyEvent(replaced!) })
      await recordWebhookEvent(tx, { businessId: old.businessId, type: 'key.created', payload: keyEvent(made.row) })
      return { old: replaced!, made }
    })
    onChange(rolled.old.keyHash)
    onChange(rolled.made.row.keyHash)
    return { record: toKeyRecord(rolled.made.row), key: rolled.made.key, replaced: toKeyRecord(rolled.old) }
  }
}

/** A key in a webhook event: ids and facts a receiver acts on, never the key itself (only its hint). */
export function keyEvent(row: ApiKeyRow) {
  return {
    keyId: row.id,
    name: row.name,
    type: row.type,
    keyHint: row.keyHint,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    rolledFrom: row.rolledFrom,
    replacedBy: row.replacedBy,
  }
}

/** Why a key cannot be rolled (409), or null. */
function rollRefusal(key: ApiKeyRow, now: Date): string | null {
  if (key.revokedAt) return `Key ${key.id} is revoked; a revoked key cannot be rolled. Create a new key instead.`
  if (key.replacedBy) return `Key ${key.id} was already rolled: it is replaced by ${key.replacedBy}. Roll that key instead.`
  if (key.expiresAt && key.expiresAt <= now) return `Key ${key.id} has expired; an expired key cannot be rolled. Create a new key instead.`
  return null
}

/** A new key's settings as the trail shows a creation: every field from null. */
function creation(row: ApiKeyRow): FieldChanges {
  const record = toKeyRecord(row)
  const changes: FieldChanges = { type: { from: null, to: record.type } }
  for (const field of AUDITED_FIELDS) {
    const value = record[field]
    if (value !== null && !(Array.isArray(value) && value.length === 0)) changes[field] = { from: null, to: value }
  }
  return changes
}

export type KeyService = ReturnType<typeof createKeyService>

function invalid(problems: FieldProblem[]): ApiError {
  const message = problems.map((p) => `${p.field}: ${p.message}`).join(' ')
  // `field` only when every problem is about the same one: two fields at fault is no one path.
  const fields = new Set(problems.map((p) => p.field))
  return new ApiError('invalid_request', message, fields.size === 1 ? { field: problems[0]!.field } : {})
}
