import { eq } from 'drizzle-orm'
import { LRUCache } from 'lru-cache'
import type { Db } from '../../db/client.ts'
import type { Budget } from '../config.ts'
import { apiKeys } from '../../db/schema/index.ts'
import type { KeyType } from './key-format.ts'
import { compileOriginMatcher, type OriginMatcher } from './origin.ts'
import type { Scope } from './scopes.ts'

/** A key as the request chain sees it: everything a check needs, precomputed once per load. */
export interface ActiveKey {
  readonly id: string
  readonly businessId: string
  readonly type: KeyType
  readonly name: string
  readonly scopes: ReadonlySet<string>
  readonly scopeList: readonly Scope[]
  readonly allowedOrigins: readonly string[]
  /** Compiled allowed origins; null for private keys, which have none. */
  readonly origins: OriginMatcher | null
  /** Milliseconds since the epoch, or null for a key that never expires. */
  readonly expiresAt: number | null
  readonly revoked: boolean
  /** The key's own budget, or null for the service default of its type (contract section 8). */
  readonly rateLimit: Budget | null
  /** Moved forward by the last-used recorder so a hot key is queued once a minute at most. */
  lastUsedAt: number | null
}

export interface KeyStore {
  /** The key with this digest, null when unknown. Synchronous on a cache hit. */
  resolve(hash: string): ActiveKey | null | Promise<ActiveKey | null>
  /** Forget what is cached for this digest: called after every change to a key. */
  invalidate(hash: string): void
}

export interface KeyStoreOptions {
  /**
   * How long a loaded key is trusted before it is read again. Another instance's
   * revocation or edit reaches this one within this time (the contract allows 1 s);
   * this instance's own changes invalidate at once.
   */
  ttlMs?: number
  max?: number
  /** Unknown digests are remembered (bounded, briefly) so floods of a bad key stay off the database. */
  unknownMax?: number
  unknownTtlMs?: number
}

export function createKeyStore(db: Db, options: KeyStoreOptions = {}): KeyStore {
  const known = new LRUCache<string, ActiveKey>({
    max: options.max ?? 50_000,
    ttl: options.ttlMs ?? 500,
  })
  const unknown = new LRUCache<string, true>({
    max: options.unknownMax ?? 10_000,
    ttl: options.unknownTtlMs ?? 1_000,
  })
  const loading = new Map<string, Promise<ActiveKey | null>>()
  // Bumped by every invalidation: a load that started before it must not cache its
  // (possibly stale) row afterwards.
  let generation = 0

  async function load(hash: string): Promise<ActiveKey | null> {
    const startedAt = generation
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.keyHash, hash)).limit(1)
    const key = row ? toActiveKey(row) : null
    if (startedAt === generation) {
      if (key) known.set(hash, key)
      else unknown.set(hash, true)
    }
    return key
  }

  return {
    resolve(hash) {
      const hit = known.get(hash)
      if (hit !== undefined) return hit
      if (unknown.has(hash)) return null
      let pending = loading.get(hash)
      if (pending === undefined) {
        // Concurrent misses for one key share a single query.
        pending = load(hash).finally(() => loading.delete(hash))
        loading.set(hash, pending)
      }
      return pending
    },
    invalidate(hash) {
      generation++
      known.delete(hash)
      unknown.delete(hash)
    },
  }
}

type ApiKeyRow = typeof apiKeys.$inferSelect

function toActiveKey(row: ApiKeyRow): ActiveKey {
  return {
    id: row.id,
    businessId: row.businessId,
    type: row.type,
    name: row.name,
    scopes: new Set(row.scopes),
    scopeList: row.scopes as Scope[],
    allowedOrigins: row.allowedOrigins,
    origins: row.type === 'public' ? compileOriginMatcher(row.allowedOrigins) : null,
    expiresAt: row.expiresAt ? row.expiresAt.getTime() : null,
    revoked: row.revokedAt !== null,
    rateLimit: storedRateLimit(row),
    lastUsedAt: row.lastUsedAt ? row.lastUsedAt.getTime() : null,
  }
}

/** A key row's own budget, or null for the service default (both columns or neither). */
export function storedRateLimit(row: Pick<ApiKeyRow, 'rateLimitLimit' | 'rateLimitWindowSeconds'>): Budget | null {
  return row.rateLimitLimit !== null && row.rateLimitWindowSeconds !== null
    ? { limit: row.rateLimitLimit, windowSeconds: row.rateLimitWindowSeconds }
    : null
}
