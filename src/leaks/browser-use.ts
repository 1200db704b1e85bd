import { and, eq, gt, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { auditEntries } from '../../db/schema/index.ts'
import type { ActiveKey } from '../access/key-store.ts'
import { byService, recordChange } from '../audit/trail.ts'
import { BoundedMap } from '../shared/bounded-map.ts'

const DAY_MS = 86_400_000
/** Keys this instance remembers having noted: past that, the oldest is forgotten (and may be noted again, which the trail's check absorbs). */
const MAX_KEYS = 10_000

export interface BrowserUseAudit {
  /** A private key was sent with an Origin header: noted for the trail, on the request path as one map lookup. */
  note(key: ActiveKey, origin: string, at: number): void
  /** The scheduled round: writes a `key.browser_use` entry for each key noted, unless its trail has one from the last day. */
  flush(): Promise<void>
  readonly intervalMs: number
}

/**
 * The trail's `key.browser_use` entries (docs/api.md, "When a key leaks"): at most one a day
 * per key, whatever the instances. Each instance notes a key at most once a day; the write
 * takes a transaction-scoped advisory lock on the key and looks for an entry of the last
 * day first, so two instances noting one key together write one entry.
 */
export function createBrowserUseAudit(db: Db, options: { intervalMs?: number } = {}): BrowserUseAudit {
  const notedAt = new BoundedMap<string, number>(MAX_KEYS)
  // Bounded by `notedAt`'s size: a key waits here only once per note.
  let waiting = new Map<string, { businessId: string; origin: string }>()

  async function write(keyId: string, use: { businessId: string; origin: string }): Promise<void> {
    await db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`keygate:browser_use:${keyId}`}))`)
      const recent = await tx
        .select({ id: auditEntries.id })
        .from(auditEntries)
        .where(
          and(
            eq(auditEntries.keyId, keyId),
            eq(auditEntries.action, 'key.browser_use'),
            gt(auditEntries.at, new Date(Date.now() - DAY_MS)),
          ),
        )
        .limit(1)
      if (recent.length > 0) return
      await recordChange(tx, {
        businessId: use.businessId,
        action: 'key.browser_use',
        by: byService(),
        keyId,
        changes: { origin: { from: null, to: use.origin } },
      })
    })
  }

  return {
    intervalMs: options.intervalMs ?? 5_000,
    note(key, origin, at) {
      const last = notedAt.get(key.id)
      if (last !== undefined && at - last < DAY_MS) return
      notedAt.set(key.id, at)
      if (waiting.size < MAX_KEYS) waiting.set(key.id, { businessId: key.businessId, origin })
    },
    async flush() {
      const due = waiting
      waiting = new Map()
      for (const [keyId, use] of due) {
        try {
          await write(keyId, use)
        } catch (error) {
          // Not written: the key's next browser request notes it again.
          notedAt.delete(keyId)
          throw error
        }
      }
    },
  }
}
