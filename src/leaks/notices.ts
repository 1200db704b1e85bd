import { and, desc, eq, isNotNull, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys, type KeyLeak } from '../../db/schema/index.ts'

/** A leaked key the business's members have not dismissed yet: the dashboard's banner. */
export interface LeakNotice {
  keyId: string
  name: string
  keyHint: string
  leak: KeyLeak
  /** The key that replaced it, once rolled. */
  replacedBy: string | null
}

/** The most notices a page shows; more than that is a list for the keys page, not a banner. */
const MAX_NOTICES = 5

/** The business's leaked keys whose banner no member has dismissed, newest report first. */
export async function leakNotices(db: Db, businessId: string): Promise<LeakNotice[]> {
  const rows = await db
    .select({ keyId: apiKeys.id, name: apiKeys.name, keyHint: apiKeys.keyHint, leak: apiKeys.leak, replacedBy: apiKeys.replacedBy })
    .from(apiKeys)
    .where(and(eq(apiKeys.businessId, businessId), isNotNull(apiKeys.leak), isNull(apiKeys.leakDismissedAt)))
    .orderBy(desc(apiKeys.updatedAt))
    .limit(MAX_NOTICES)
  return rows.map((row) => ({ ...row, leak: row.leak! }))
}
