import type { Db } from '../../db/client.ts'
import { sql } from 'drizzle-orm'
import type { ActiveKey } from './key-store.ts'

/** `lastUsedAt` is kept to the minute: a use is written when the stored value is null or older. */
export const LAST_USED_RESOLUTION_MS = 60_000

export interface LastUsedRecorder {
  /** Notes an accepted request. Never waits for the database. */
  touch(key: ActiveKey, at: number): void
  /** Writes what is queued (also called by the timer). */
  flush(): Promise<void>
  /** Stops the timer after a last flush (graceful shutdown). */
  close(): Promise<void>
}

/**
 * Coalesces uses off the request path: each key is queued at most once a minute, and every
 * `flushIntervalMs` one UPDATE writes the whole queue. The contract wants a use visible
 * within 2 s; the default interval leaves a second of margin for the write itself.
 */
export function createLastUsedRecorder(
  db: Db,
  options: { flushIntervalMs?: number; onError?: (error: unknown) => void } = {},
): LastUsedRecorder {
  const interval = options.flushIntervalMs ?? 1_000
  const pending = new Map<string, number>()
  let timer: ReturnType<typeof setTimeout> | null = null
  let flushing: Promise<void> = Promise.resolve()
  let closed = false

  async function write(batch: Map<string, number>): Promise<void> {
    const rows = sql.join(
      [...batch].map(([id, at]) => sql`(${id}::uuid, ${new Date(at).toISOString()}::timestamptz)`),
      sql`, `,
    )
    // Invariant: last_used_at only moves forward, and by at least the resolution. The
    // guard lives in the statement so concurrent instances never write it backwards.
    await db.execute(sql`
      update api_keys as k set last_used_at = u.used_at
      from (values ${rows}) as u(id, used_at)
      where k.id = u.id
        and (k.last_used_at is null or k.last_used_at < u.used_at - interval '60 seconds')`)
  }

  function flush(): Promise<void> {
    timer = null
    if (pending.size === 0) return flushing
    const batch = new Map(pending)
    pending.clear()
    flushing = flushing
      .then(() => write(batch))
      .catch((error) => {
        // Keep the uses for the next attempt unless a newer one was queued meanwhile.
        for (const [id, at] of batch) if (!pending.has(id)) pending.set(id, at)
        options.onError?.(error)
        schedule()
      })
    return flushing
  }

  function schedule(): void {
    if (timer === null && !closed) {
      timer = setTimeout(flush, interval)
      timer.unref?.()
    }
  }

  return {
    touch(key, at) {
      if (key.lastUsedAt !== null && at - key.lastUsedAt <= LAST_USED_RESOLUTION_MS) return
      key.lastUsedAt = at
      pending.set(key.id, at)
      schedule()
    },
    flush,
    async close() {
      closed = true
      if (timer !== null) clearTimeout(timer)
      await flush()
    },
  }
}
