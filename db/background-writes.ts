/**
 * What the service writes beside requests (usage counts, `lastUsedAt`) goes through this:
 * a write that fails or times out is retried in two halves after a pause that doubles
 * each time, and rows that failed `maxAttempts` times are dropped and counted (background
 * records never decide availability, and are bounded). A round
 * stops at its first failure, so a database that is slow or locked costs one failed
 * write per round, not one per waiting batch.
 *
 * The caller runs rounds one at a time (its flush). Nothing here marks the database down:
 * that is the probe's call (db/availability.ts).
 */
export interface BackgroundWriter<T> {
  /**
   * Writes `rows` (if any), then the retries that are due; with `everything`, every
   * waiting retry now (an explicit flush, shutdown). Never rejects.
   */
  run(rows: readonly T[], options?: { everything?: boolean }): Promise<void>
  /** Drops what waits for a retry, counted (shutdown, once the last round is done). */
  abandon(): void
  readonly stats: BackgroundWriteStats
}

export interface BackgroundWriteStats {
  /** Rows written. */
  written: number
  /** Writes that failed (each try of a batch). */
  failures: number
  /** Rows given up on after their last try, or pushed out of a full retry queue. */
  dropped: number
  /** Rows waiting for a retry now. */
  waiting: number
}

export interface BackgroundWriterOptions {
  /** Tries a row gets (the first write included) before it is dropped. */
  maxAttempts?: number
  /** Pause before the first retry, doubled for each one after, up to maxDelayMs. */
  retryDelayMs?: number
  maxDelayMs?: number
  /** Most rows waiting for a retry; past it the oldest batches are dropped. */
  maxWaitingRows?: number
  clock?: () => number
  /** Each failed write. */
  onFailure?: (error: unknown) => void
  /** Rows dropped: called for the first drop after a write that succeeded, not for each. */
  onDrop?: (rows: number, error: unknown) => void
}

export const BACKGROUND_WRITE_DEFAULTS = {
  maxAttempts: 4,
  retryDelayMs: 5_000,
  maxDelayMs: 60_000,
  maxWaitingRows: 50_000,
} as const

interface Batch<T> {
  rows: readonly T[]
  /** Tries made so far. */
  attempts: number
  /** Not retried before this time (ms). */
  dueAt: number
}

export function createBackgroundWriter<T>(
  write: (rows: readonly T[]) => Promise<void>,
  options: BackgroundWriterOptions = {},
): BackgroundWriter<T> {
  const maxAttempts = options.maxAttempts ?? BACKGROUND_WRITE_DEFAULTS.maxAttempts
  const retryDelayMs = options.retryDelayMs ?? BACKGROUND_WRITE_DEFAULTS.retryDelayMs
  const maxDelayMs = options.maxDelayMs ?? BACKGROUND_WRITE_DEFAULTS.maxDelayMs
  const maxWaitingRows = options.maxWaitingRows ?? BACKGROUND_WRITE_DEFAULTS.maxWaitingRows
  const clock = options.clock ?? Date.now
  const stats: BackgroundWriteStats = { written: 0, failures: 0, dropped: 0, waiting: 0 }
  let waiting: Batch<T>[] = []
  // Whether a drop was reported since the last write that succeeded: one log line per run of drops.
  let dropReported = false

  function drop(rows: number, error: unknown): void {
    stats.dropped += rows
    if (!dropReported) {
      dropReported = true
      options.onDrop?.(rows, error)
    }
  }

  function retryLater(batch: Batch<T>, error: unknown): void {
    const attempts = batch.attempts + 1
    if (attempts >= maxAttempts) {
      drop(batch.rows.length, error)
      return
    }
    const dueAt = clock() + Math.min(maxDelayMs, retryDelayMs * 2 ** (attempts - 1))
    // Smaller batches: a write too big for the deadline may pass in halves.
    const half = Math.ceil(batch.rows.length / 2)
    const parts = batch.rows.length > 1 ? [batch.rows.slice(0, half), batch.rows.slice(half)] : [batch.rows]
    for (const rows of parts) waiting.push({ rows, attempts, dueAt })
    stats.waiting += batch.rows.length
    while (stats.waiting > maxWaitingRows) {
      const oldest = waiting.shift()!
      stats.waiting -= oldest.rows.length
      drop(oldest.rows.length, error)
    }
  }

  /** One try of `batch`; false when it failed (and was queued again or dropped). */
  async function attempt(batch: Batch<T>): Promise<boolean> {
    try {
      await write(batch.rows)
    } catch (error) {
      stats.failures++
      options.onFailure?.(error)
      retryLater(batch, error)
      return false
    }
    stats.written += batch.rows.length
    dropReported = false
    return true
  }

  return {
    async run(rows, runOptions = {}) {
      if (rows.length > 0 && !(await attempt({ rows, attempts: 0, dueAt: 0 }))) return
      const now = clock()
      const due = runOptions.everything ? waiting : waiting.filter((batch) => batch.dueAt <= now)
      if (due.length === 0) return
      const dueSet = new Set(due)
      waiting = waiting.filter((batch) => !dueSet.has(batch))
      for (const batch of due) stats.waiting -= batch.rows.length
      for (let i = 0; i < due.length; i++) {
        if (await attempt(due[i]!)) continue
        // Stop at the first failure: the rest wait for the next round, unchanged.
        const rest = due.slice(i + 1)
        waiting.unshift(...rest)
        for (const batch of rest) stats.waiting += batch.rows.length
        return
      }
    },
    abandon() {
      const rows = waiting.reduce((sum, batch) => sum + batch.rows.length, 0)
      waiting = []
      stats.waiting = 0
      if (rows > 0) drop(rows, new Error('shutting down with writes still waiting for a retry'))
    },
    stats,
  }
}
