import { and, desc, eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { auditEntries, type AuditAction } from '../../db/schema/index.ts'
import { before, type Position } from '../shared/paging.ts'

/**
 * Who made a change: the operator's token, a signed-in member, an API key asking for an
 * erasure through the API, or the service itself acting on what it saw (a leaked key's
 * report, a private key used from a browser).
 */
export type Actor = 'admin' | `member:${string}` | `key:${string}` | 'service'

/** The author of a change and the request that carried it, passed down to the trail. */
export interface ChangeAuthor {
  actor: Actor
  requestId?: string
}

/** The operator, through the admin API: the request id is the answer's X-Request-Id. */
export function byAdmin(set: { headers: Record<string, unknown> }): ChangeAuthor {
  const requestId = set.headers['x-request-id']
  return { actor: 'admin', requestId: typeof requestId === 'string' ? requestId : undefined }
}

/** An API key, through /api/v0: the request id is the answer's X-Request-Id. */
export function byKey(keyId: string, set: { headers: Record<string, unknown> }): ChangeAuthor {
  return { ...byAdmin(set), actor: `key:${keyId}` }
}

/** The service itself; `requestId` the request that brought it to act (a leak report), if any. */
export function byService(requestId?: string): ChangeAuthor {
  return { actor: 'service', requestId }
}

export function byMember(email: string): ChangeAuthor {
  return { actor: `member:${email}` }
}

export type FieldChanges = Record<string, { from: unknown; to: unknown }>

export type AuditEntryRow = typeof auditEntries.$inferSelect

/**
 * Appends one entry, on the transaction of the change it records: the change and its entry
 * commit together or not at all. Entries are never updated or deleted (a trigger refuses).
 */
export async function recordChange(
  tx: Db,
  entry: { businessId: string; action: AuditAction; by: ChangeAuthor; keyId?: string; memberId?: string; changes?: FieldChanges },
): Promise<void> {
  await tx.insert(auditEntries).values({
    // Time-ordered, and monotonic within the process (Bun's v7 ids count within a
    // millisecond): the trail pages by (at, id), and one change's entries (a roll writes
    // two) often share their millisecond, which a random id would list in any order.
    id: Bun.randomUUIDv7(),
    businessId: entry.businessId,
    // Milliseconds, as the pages' cursors carry them (src/shared/paging.ts).
    at: new Date(),
    actor: entry.by.actor,
    action: entry.action,
    keyId: entry.keyId ?? null,
    memberId: entry.memberId ?? null,
    requestId: entry.by.requestId ?? null,
    changes: entry.changes ?? {},
  })
}

/**
 * The fields of `fields` whose values differ between `before` and `after`, as {from, to};
 * nothing unchanged. Values compare as JSON (arrays and dates included).
 */
export function changedFields<T extends object>(before: T, after: T, fields: readonly (keyof T & string)[]): FieldChanges {
  const changes: FieldChanges = {}
  for (const field of fields) {
    const from = (before[field] as unknown) ?? null
    const to = (after[field] as unknown) ?? null
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[field] = { from, to }
  }
  return changes
}

/** A business's trail (or one key's), newest first, `limit` entries after `after`. */
export async function listChanges(
  db: Db,
  filter: { businessId: string; keyId?: string; after: Position | null; limit: number },
): Promise<AuditEntryRow[]> {
  return db
    .select()
    .from(auditEntries)
    .where(
      and(
        eq(auditEntries.businessId, filter.businessId),
        filter.keyId ? eq(auditEntries.keyId, filter.keyId) : undefined,
        before(auditEntries.at, auditEntries.id, filter.after),
      ),
    )
    .orderBy(desc(auditEntries.at), desc(auditEntries.id))
    .limit(filter.limit)
}

/** The entry on the wire. */
export function toAuditRecord(row: AuditEntryRow) {
  return {
    id: row.id,
    businessId: row.businessId,
    at: row.at.toISOString(),
    actor: row.actor,
    action: row.action,
    keyId: row.keyId,
    requestId: row.requestId,
    changes: row.changes as FieldChanges,
  }
}
