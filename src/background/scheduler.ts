import type { Database, Db, SessionLimits } from '../../db/client.ts'

// The service's background work (event maintenance, erasures, the usage and lastUsedAt
// writes) runs here, one scheduler per app: each job on its own period, one run of a job at
// a time, a failed run logged and tried again sooner (doubling up to its period), and one
// `stop()` that waits for what runs. An exclusive job runs on one instance at a time: it
// takes a PostgreSQL advisory lock named after it, and an instance that finds it held skips
// that run (docs/architecture.md, "Background work").

/** What a run is given: the database to use (an exclusive job's: the session holding its lock). */
export interface JobRun {
  readonly db: Db
}

export type Job = (run: JobRun) => Promise<void>

export interface JobOptions {
  /** One instance at a time, under the job's advisory lock. */
  exclusive?: boolean
  /**
   * The database the job works on: its lock, its session or background pool (default the
   * scheduler's; the event store's jobs name its database, which may be another).
   */
  database?: Database
  /** The first run's delay (default: at once). */
  firstRunInMs?: number
  /** The delay before the first retry of a failed run, doubled each failure up to the period (default: the period). */
  retryMs?: number
}

export interface ScheduledJob {
  readonly name: string
  /**
   * Asks for a run within `inMs`, sooner than the period would. At once (the default) starts
   * it now, or, while a run is in progress, one more right after it.
   */
  runSoon(inMs?: number): void
  /** Resolves once no run of the job is in progress. */
  idle(): Promise<void>
}

/** The clock and timers the scheduler uses (tests give their own: test/support/manual-timers.ts). */
export interface Timers {
  now(): number
  setTimeout(run: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export interface SchedulerDeps {
  database: Database
  /** A run that failed (it is tried again; the error is the job's to describe). */
  onError(job: string, error: unknown): void
  timers?: Timers
  /** An exclusive run's session limits (default 30 s a statement, 2 s a lock wait). */
  sessionLimits?: SessionLimits
}

export interface Scheduler {
  schedule(name: string, everyMs: number, job: Job, options?: JobOptions): ScheduledJob
  /** No further runs; waits for those in progress. */
  stop(): Promise<void>
}

const DEFAULT_SESSION_LIMITS: SessionLimits = { statementTimeoutMs: 30_000, lockTimeoutMs: 2_000 }

/** The advisory lock's name of an exclusive job: the same on every instance. */
export function jobLock(name: string): string {
  return `keygate:${name}`
}

/**
 * Runs `task` on a session of its own holding the job's advisory lock; `{ ran: false }` when
 * another instance holds it. The scheduler runs exclusive jobs through it, and tests and
 * benches run a job's body the same way.
 */
export function exclusively<T>(
  database: Database,
  name: string,
  task: (db: Db) => Promise<T>,
  limits: SessionLimits = DEFAULT_SESSION_LIMITS,
): Promise<{ ran: true; result: T } | { ran: false }> {
  return database.tryExclusively(jobLock(name), task, limits)
}

const realTimers: Timers = {
  now: () => performance.now(),
  setTimeout(run, ms) {
    const handle = setTimeout(run, ms)
    // Background work never keeps a process alive on its own.
    handle.unref?.()
    return handle
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const timers = deps.timers ?? realTimers
  const running = new Set<Promise<void>>()
  const stops: (() => void)[] = []
  let stopped = false

  function schedule(name: string, everyMs: number, job: Job, options: JobOptions = {}): ScheduledJob {
    const firstRetryMs = Math.min(options.retryMs ?? everyMs, everyMs)
    let timer: unknown = null
    let dueAt = Number.POSITIVE_INFINITY
    let current: Promise<void> | null = null
    let again = false
    let failures = 0

    function arm(inMs: number): void {
      if (stopped) return
      const at = timers.now() + inMs
      // The sooner of two asks wins; a later one would only delay a run already due.
      if (timer !== null && at >= dueAt) return
      if (timer !== null) timers.clearTimeout(timer)
      dueAt = at
      timer = timers.setTimeout(start, inMs)
    }

    function start(): void {
      timer = null
      dueAt = Number.POSITIVE_INFINITY
      if (stopped) return
      if (current !== null) {
        again = true
        return
      }
      const run = runOnce().finally(() => {
        running.delete(run)
        current = null
        if (again) {
          again = false
          start()
        }
      })
      current = run
      running.add(run)
    }

    async function runOnce(): Promise<void> {
      try {
        const database = options.database ?? deps.database
        if (options.exclusive) await exclusively(database, name, (db) => job({ db }), deps.sessionLimits)
        else await job({ db: database.background })
        failures = 0
        arm(everyMs)
      } catch (error) {
        deps.onError(name, error)
        arm(Math.min(firstRetryMs * 2 ** failures, everyMs))
        failures++
      }
    }

    stops.push(() => {
      if (timer !== null) timers.clearTimeout(timer)
      timer = null
    })
    arm(options.firstRunInMs ?? 0)
    return {
      name,
      runSoon(inMs = 0) {
        if (inMs > 0) return arm(inMs)
        // At once means now, not a timer's turn later: a caller waiting on idle() sees the run.
        if (current !== null) again = true
        else {
          if (timer !== null) timers.clearTimeout(timer)
          start()
        }
      },
      async idle() {
        while (current !== null) await current
      },
    }
  }

  return {
    schedule,
    async stop() {
      stopped = true
      for (const stop of stops) stop()
      while (running.size > 0) await Promise.all(running)
    },
  }
}
