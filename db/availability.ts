import { DatabaseDownError, isDatabaseUnavailable } from './faults.ts'

/**
 * Whether the database answers, as seen from this process. Only the probe (a check of the
 * database itself) decides: a statement that fails as an outage would (a lost connection,
 * a deadline) makes it suspect, and the probe runs at once. If the probe fails the
 * database is down: statements then fail at once (a 503 now rather than one more query
 * queued behind a dead server) while the probe asks every `probeIntervalMs` until it
 * answers. So one slow statement, or a table another session locked, never takes the
 * instance down while the server answers. Listeners hear each change once: the log gets
 * one line per outage, not one per failed statement.
 */
export interface Availability {
  readonly up: boolean
  /** Throws DatabaseDownError while down. */
  admit(): void
  /**
   * While a probe asked by a failed statement is under way: a promise settled once it has
   * answered (then `admit` says whether to go on). Statements wait for it rather than
   * pile into a connection pool that may be reconnecting to a dead server, to run when it
   * is back after their callers were told 503. Null otherwise: go at once.
   */
  suspicion(): Promise<void> | null
  /**
   * Notes a failed statement; true when the failure means the database is unavailable
   * (its caller answers 503). Such a failure asks for a probe at once, unless one is under
   * way; the probe's answer decides. `startedAt`: when the statement was sent. One sent
   * before the database last came back is news of the outage that ended: no probe.
   */
  failed(error: unknown, startedAt?: number): boolean
  onChange(listener: AvailabilityListener): void
  /**
   * Calls `abort` if the database is found down before the returned function is called:
   * statements waiting on it fail then, not at their own deadline.
   */
  abortOnDown(abort: () => void): () => void
  close(): void
}

export type AvailabilityListener = (change: { up: true; downForMs: number } | { up: false; error: unknown }) => void

export function watchAvailability(
  probe: () => Promise<void>,
  options: { probeIntervalMs?: number; clock?: () => number } = {},
): Availability {
  const interval = options.probeIntervalMs ?? 500
  const clock = options.clock ?? Date.now
  const listeners: AvailabilityListener[] = []
  const waiting = new Set<() => void>()
  let downSince: number | null = null
  let backSince = Number.NEGATIVE_INFINITY
  let timer: ReturnType<typeof setTimeout> | null = null
  let suspected: { promise: Promise<void>; settle: () => void } | null = null
  let closed = false

  function emit(change: Parameters<AvailabilityListener>[0]): void {
    for (const listener of listeners) {
      try {
        listener(change)
      } catch {
        // A listener's fault must not keep the others from hearing the change.
      }
    }
  }

  function schedule(delay: number): void {
    if (closed || timer !== null) return
    timer = setTimeout(() => void attempt(), delay)
    timer.unref?.()
  }

  /** One probe; down on failure (probing again every interval), up when it answers. */
  async function attempt(): Promise<void> {
    try {
      await probe()
    } catch (error) {
      timer = null
      if (downSince === null) markDown(error)
      endSuspicion()
      schedule(interval)
      return
    }
    timer = null
    endSuspicion()
    if (downSince === null) return
    const downForMs = clock() - downSince
    downSince = null
    backSince = clock()
    emit({ up: true, downForMs })
  }

  function suspect(): void {
    if (suspected === null) {
      let settle!: () => void
      const promise = new Promise<void>((resolve) => (settle = resolve))
      suspected = { promise, settle }
    }
    schedule(0)
  }

  function endSuspicion(): void {
    const ended = suspected
    suspected = null
    ended?.settle()
  }

  function markDown(error: unknown): void {
    downSince = clock()
    emit({ up: false, error })
    const aborts = [...waiting]
    waiting.clear()
    for (const abort of aborts) abort()
  }

  return {
    get up() {
      return downSince === null
    },
    admit() {
      if (downSince !== null) throw new DatabaseDownError()
    },
    suspicion: () => suspected?.promise ?? null,
    failed(error, startedAt) {
      if (!isDatabaseUnavailable(error)) return false
      if (startedAt !== undefined && startedAt < backSince) return true
      // Suspicion only: the probe decides (while down, it is already scheduled).
      if (downSince === null && !(error instanceof DatabaseDownError)) suspect()
      return true
    },
    onChange(listener) {
      listeners.push(listener)
    },
    abortOnDown(abort) {
      waiting.add(abort)
      return () => void waiting.delete(abort)
    },
    close() {
      closed = true
      if (timer !== null) clearTimeout(timer)
      timer = null
      endSuspicion()
    },
  }
}
