import { and, gt, isNull, lte } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys } from '../../db/schema/index.ts'
import { recordWebhookEvent } from '../webhooks/outbox.ts'
import { keyEvent } from './service.ts'

const DAY_MS = 86_400_000

/** The notices before a key expires (docs/webhooks.md, "Events"): the nearest one reached is told. */
export const EXPIRY_NOTICES = [
  { name: '1 day', beforeMs: DAY_MS },
  { name: '7 days', beforeMs: 7 * DAY_MS },
] as const

/**
 * One round of `key.expiring` events: for each live key that expires within 7 days, the
 * nearest notice it has reached (1 day, else 7 days), told once: the event's dedupe key
 * names the key, its expiry and the notice, so a later round, another instance or a
 * restart writes nothing more, and a key whose expiry moves gets its notices again.
 */
export async function writeExpiryNotices(db: Db, now = new Date()): Promise<number> {
  const horizon = new Date(now.getTime() + EXPIRY_NOTICES.at(-1)!.beforeMs)
  const expiring = await db
    .select()
    .from(apiKeys)
    .where(and(isNull(apiKeys.revokedAt), gt(apiKeys.expiresAt, now), lte(apiKeys.expiresAt, horizon)))
  let told = 0
  for (const key of expiring) {
    const left = key.expiresAt!.getTime() - now.getTime()
    const notice = EXPIRY_NOTICES.find((n) => left <= n.beforeMs)!
    const id = await db.transaction((tx) =>
      recordWebhookEvent(tx, {
        businessId: key.businessId,
        type: 'key.expiring',
        payload: { ...keyEvent(key), expiresIn: notice.name },
        dedupeKey: `key.expiring ${key.id} ${key.expiresAt!.toISOString()} ${notice.name}`,
      }),
    )
    if (id !== null) told++
  }
  return told
}
