import type { Db } from '../../db/client.ts'
import { createBackgroundWriter, type BackgroundWriterOptions, type BackgroundWriteStats } from '../../db/background-writes.ts'
import { sql } from 'drizzle-orm'
import { BoundedMap } from '../shared/bounded-map.ts'
import type { ActiveKey } from './key-store.ts'

/** `lastUsedAt` is kept to the minute: a use is written when the stored value is null or older. */
export const LAST_USED_RESOLUTION_MS = 60_000

export interface LastUsedRecorder {
  /** Notes an accepted request. Never waits for the database. */
  touch(key: ActiveKey, at: number): void
  /** The scheduled round: writes what is queued, then the retries that are due. */
  flushDue(): Promise<void>
  /** Writes what is queued and every write waiting for a retry, now. */
  flush(): Promise<void>
  /** A last flush, then nothing more (graceful shutdown). */
  close(): Promise<void>
  /** How often the app's scheduler calls `flushDue`. */
  readonly intervalMs: number
  /** Rows written, failed tries, rows dropped after their last try, rows waiting. */
  readonly stats: BackgroundWriteStats
}

export interface LastUsedOptions {
  flushIntervalMs?: number
  /** Retries of failed writes (db/background-writes.ts). */
  retry?: Pick<BackgroundWriterOptions, 'maxAttempts' | 'retryDelayMs' | 'maxDelayMs' | 'maxWaitingRows'>
  /** Each failed write. */
  onError?: (error: unknown) => void
  /** Rows dropped after their last try: once per run of drops. */
  onDrop?: (rows: number, error: unknown) => void
}

/**
 * Coalesces uses off the request path: each key is queued at most once a minute, and every
 * `flushIntervalMs` (the app's scheduler, src/background/scheduler.ts) one UPDATE writes the whole queue. The contract wants a use visible
 * within 2 s; the default interval leaves a second of margin for the write itself. A write
 * that fails is retried in smaller batches and then dropped, counted in `stats`
 * (db/background-writes.ts): a later use writes the key again anyway.
 */
export function createLastUsedRecorder(db: Db, options: LastUsedOptions = {}): LastUsedRecorder {
  const interval = options.flushIntervalMs ?? 1_000
  const pending = new Map<string, number>()
  const writer = createBackgroundWriter<[id: string, at: number]>((rows) => write(rows), {
    retryDelayMs: 2_000,
    ...options.retry,
    onFailure: options.onError,
    onDrop: options.onDrop,
  })
  // When each key's use was last noted here: the cached key itself is never written to, and
  // a key forgotten by this bound is at worst written once more.
  const noted = new BoundedMap<string, number>(100_000)
  let flushing: Promise<void> = Promise.resolve()

  async function write(batch: readonly [string, number][]): Promise<void> {
    const rows = sql.join(
      batch.map(([id, at]) => sql`(${id}::uuid, ${new Date(at).toISOString()}::timestamptz)`),
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

  /** Writes what is queued, then the retries that are due (all of them when `everything`). */
  function flush(everything: boolean): Promise<void> {
    const batch = [...pending]
    pending.clear()
    flushing = flushing.then(() => writer.run(batch, { everything }))
    return flushing
  }

  return {
    touch(key, at) {
      const last = noted.get(key.id) ?? key.lastUsedAt
      if (last !== null && at - last <= LAST_USED_RESOLUTION_MS) return
      noted.set(key.id, at)
      pending.set(key.id, at)
    },
    flushDue: () => flush(false),
    flush: () => flush(true),
    intervalMs: interval,
    async close() {
      await flush(true)
      writer.abandon()
    },
    stats: writer.stats,
  }
}
