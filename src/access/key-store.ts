import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import type { KeyCacheStats } from '../observability/metrics.ts'
import type { Budget } from '../config.ts'
import { apiKeys, businesses } from '../../db/schema/index.ts'
import type { KeyType } from './key-format.ts'
import { compileIpMatcher, type IpMatcher } from './allowed-ips.ts'
import { compileOriginMatcher, type OriginMatcher } from './origin/index.ts'
import { BoundedMap } from '../shared/bounded-map.ts'
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
  /** originPolicy "report": an Origin the list does not allow is served and counted. */
  readonly reportOnly: boolean
  readonly allowedIps: readonly string[]
  /** Compiled allowed client addresses; null when any address is allowed. */
  readonly ips: IpMatcher | null
  /** ipPolicy "report": an address the list does not allow is served and counted. */
  readonly ipReportOnly: boolean
  /** Milliseconds since the epoch, or null for a key that never expires. */
  readonly expiresAt: number | null
  readonly revoked: boolean
  /** The key's own budget, or null for the service default of its type (docs/api.md, "Rate limits"). */
  readonly rateLimit: Budget | null
  /** Moved forward by the last-used recorder so a hot key is queued once a minute at most. */
  lastUsedAt: number | null
}

export interface KeyStore {
  /** The key with this digest, null when unknown: from the cache while fresh, else one read shared by concurrent callers. */
  resolve(hash: string): Promise<ActiveKey | null>
  /** Forget what is cached for this digest: called after every change to a key, here or elsewhere. */
  invalidate(hash: string): void
  /** Forget everything (the invalidation feed was lost or is back: anything may have changed meanwhile). */
  flush(): void
  /**
   * `live`: changes reach this store at once (LISTEN/NOTIFY, or a single process), so a
   * loaded key is trusted for `ttlMs`. `fallback`: they may not, so only for `fallbackTtlMs`.
   */
  setMode(mode: KeyCacheMode): void
  readonly mode: KeyCacheMode
  readonly stats: Readonly<KeyCacheStats>
}

export type KeyCacheMode = 'live' | 'fallback'

export interface KeyStoreOptions {
  /**
   * How long a loaded key is trusted while invalidation is live (default 60 s). Every
   * change to a key reaches every instance through NOTIFY at once; this only bounds how
   * long a record lives without a change.
   */
  ttlMs?: number
  /**
   * How long a loaded key is trusted while changes may be missed (default 500 ms): the
   * notification connection is down, so another instance's revocation reaches this one
   * only through re-reading (the contract allows 1 s).
   */
  fallbackTtlMs?: number
  /** The mode at start (default `fallback`, until the feed says it is listening). */
  mode?: KeyCacheMode
  max?: number
  /** Unknown digests are remembered (bounded, briefly) so floods of a bad key stay off the database. */
  unknownMax?: number
  unknownTtlMs?: number
  /**
   * Called before each load; its answer is told the key's business row as read with the key
   * (the retention cache seeds itself from it: src/events/retention.ts, `beforeOutsideRead`).
   */
  beforeBusinessRead?: () => (
    businessId: string,
    retention: Pick<typeof businesses.$inferSelect, 'eventRetentionDays' | 'eventsExpiredBefore'>,
  ) => void
}

export function createKeyStore(db: Db, options: KeyStoreOptions = {}): KeyStore {
  const liveTtl = options.ttlMs ?? 60_000
  const fallbackTtl = options.fallbackTtlMs ?? 500
  let mode: KeyCacheMode = options.mode ?? 'fallback'
  // Each entry with the time (performance.now) until which it is trusted.
  const known = new BoundedMap<string, { key: ActiveKey; until: number }>(options.max ?? 50_000)
  // Short whatever the mode: a key created elsewhere must work here within a second even
  // when its insert's notification was missed.
  const unknownTtl = options.unknownTtlMs ?? 1_000
  const unknown = new BoundedMap<string, number>(options.unknownMax ?? 10_000)
  const loading = new Map<string, Promise<ActiveKey | null>>()
  const stats: KeyCacheStats = { hit: 0, negative: 0, miss: 0 }
  // Bumped by every invalidation and flush: a load that started before it may hold the old
  // row, so it answers its own request but never caches that row.
  let generation = 0

  async function load(hash: string): Promise<ActiveKey | null> {
    const startedAt = generation
    const businessRead = options.beforeBusinessRead?.()
    const [row] = await db
      .select({
        key: apiKeys,
        retention: { eventRetentionDays: businesses.eventRetentionDays, eventsExpiredBefore: businesses.eventsExpiredBefore },
      })
      .from(apiKeys)
      .innerJoin(businesses, eq(businesses.id, apiKeys.businessId))
      .where(eq(apiKeys.keyHash, hash))
      .limit(1)
    const key = row ? toActiveKey(row.key) : null
    if (row) businessRead?.(row.key.businessId, row.retention)
    if (startedAt === generation) {
      const now = performance.now()
      if (key) known.set(hash, { key, until: now + (mode === 'live' ? liveTtl : fallbackTtl) })
      else unknown.set(hash, now + unknownTtl)
    }
    return key
  }

  function forgetLoads(): void {
    generation++
    // Requests arriving after a change must not join a load that may read the old row.
    loading.clear()
  }

  return {
    async resolve(hash) {
      const hit = known.get(hash)
      if (hit !== undefined) {
        if (performance.now() < hit.until) {
          stats.hit++
          return hit.key
        }
        known.delete(hash)
      } else {
        const until = unknown.get(hash)
        if (until !== undefined) {
          if (performance.now() < until) {
            stats.negative++
            return null
          }
          unknown.delete(hash)
        }
      }
      stats.miss++
      let pending = loading.get(hash)
      if (pending === undefined) {
        // Concurrent misses for one key share a single query.
        const started: Promise<ActiveKey | null> = load(hash).finally(() => {
          if (loading.get(hash) === started) loading.delete(hash)
        })
        pending = started
        loading.set(hash, pending)
      }
      return pending
    },
    invalidate(hash) {
      generation++
      loading.delete(hash)
      known.delete(hash)
      unknown.delete(hash)
    },
    flush() {
      forgetLoads()
      known.clear()
      unknown.clear()
    },
    setMode(next) {
      mode = next
    },
    get mode() {
      return mode
    },
    stats,
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
    reportOnly: row.originPolicy === 'report',
    allowedIps: row.allowedIps,
    // Public keys take no list; checked again here so a stray row cannot lock one out.
    ips: row.type === 'private' ? compileIpMatcher(row.allowedIps) : null,
    ipReportOnly: row.ipPolicy === 'report',
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
