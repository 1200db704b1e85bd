import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'

/**
 * Verified identity: a business's server signs a person's identifier
 * with the business's identity secret, and its pages send that `identityHash` with the
 * person. A public-key write carrying a valid hash may update the stored person; without
 * one it only creates.
 */

/** A new secret for the business, replacing any earlier one; the only time it is shown. */
export async function rollIdentitySecret(db: Db, businessId: string): Promise<string> {
  const secret = `ids_${randomBytes(32).toString('hex')}`
  await db.update(businesses).set({ identitySecret: secret }).where(eq(businesses.id, businessId))
  return secret
}

export async function identitySecretOf(db: Db, businessId: string): Promise<string | null> {
  const [row] = await db.select({ secret: businesses.identitySecret }).from(businesses).where(eq(businesses.id, businessId))
  return row?.secret ?? null
}

/** The identifier a hash covers: the item's externalId, else its email lower-cased. */
export function identifierOf(item: { externalId?: unknown; email?: unknown }): string | null {
  if (typeof item.externalId === 'string') return item.externalId
  if (typeof item.email === 'string') return item.email.toLowerCase()
  return null
}

/** The lower-case hex HMAC-SHA256 of `identifier` under `secret`: what a business's server computes. */
export function identityHash(secret: string, identifier: string): string {
  return createHmac('sha256', secret).update(identifier, 'utf8').digest('hex')
}

/** True when `item` carries the hash of its own identifier under `secret` (compared in constant time). */
export function hasVerifiedIdentity(
  secret: string | null,
  item: { externalId?: unknown; email?: unknown; identityHash?: unknown },
): boolean {
  if (secret === null || typeof item.identityHash !== 'string') return false
  const identifier = identifierOf(item)
  if (identifier === null) return false
  const expected = Buffer.from(identityHash(secret, identifier), 'utf8')
  const given = Buffer.from(item.identityHash, 'utf8')
  return given.length === expected.length && timingSafeEqual(given, expected)
}
