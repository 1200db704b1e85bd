import type { LogFields, Logger, LogLevel } from './log.ts'

export interface CauseLogOptions {
  /** At most one line of a cause in this window (a minute). */
  everyMs?: number
  /** Causes remembered at once; past that the table starts again (bounded memory). */
  maxCauses?: number
  now?: () => number
}

interface CauseState {
  /** When the last line of this cause was written. */
  writtenAt: number
  /** Lines of this cause left out since. */
  leftOut: number
}

/**
 * A log in which each cause (a failure's kind and place, chosen by the caller) writes at
 * most one line a minute: 250 clients failing the same way write one line, not 250. The
 * next line of a cause says how many were left out before it (`leftOut`).
 */
export class CauseLog {
  readonly #logger: Logger
  readonly #everyMs: number
  readonly #maxCauses: number
  readonly #now: () => number
  readonly #causes = new Map<string, CauseState>()

  constructor(logger: Logger, options: CauseLogOptions = {}) {
    this.#logger = logger
    this.#everyMs = options.everyMs ?? 60_000
    this.#maxCauses = options.maxCauses ?? 1_000
    this.#now = options.now ?? Date.now
  }

  write(level: LogLevel, cause: string, msg: string, fields?: LogFields): void {
    const now = this.#now()
    const state = this.#causes.get(cause)
    if (state !== undefined && now - state.writtenAt < this.#everyMs) {
      state.leftOut++
      return
    }
    if (state === undefined && this.#causes.size >= this.#maxCauses) this.#causes.clear()
    const leftOut = state?.leftOut ?? 0
    this.#causes.set(cause, { writtenAt: now, leftOut: 0 })
    this.#logger[level](msg, leftOut > 0 ? { ...fields, leftOut } : fields)
  }
}
