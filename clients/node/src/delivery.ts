import type { Clock } from './clock.ts'
import { Deque } from './deque.ts'
import type { KeygateError } from './errors.ts'
import type { Result } from './http.ts'
import type { Body } from './operations.ts'
import { uuidv7 } from './uuid.ts'

/** One event as `POST /api/v0/analytics` takes it; `id` and `timestamp` are set by `track()` when absent. */
export type TrackEvent = Extract<Body<'POST /api/v0/analytics'>, { events: unknown }>['events'][number]

/** An event as it was queued and sent: stamped with its id and timestamp (not the server's schema of a tracked event). */
export type StampedEvent = TrackEvent & { id: string; timestamp: string }

export interface DeliveryFailure {
  /**
   * `refused`: the service answered a final 4xx for these events (`error` says why);
   * `queue_full`: dropped to make room, the oldest first; `shutdown`: still unsent when
   * `shutdown()` ran out of time, or tracked after it.
   */
  reason: 'refused' | 'queue_full' | 'shutdown'
  events: StampedEvent[]
  error: KeygateError | null
}

export interface DeliveryStats {
  /** Held now: waiting or being sent. */
  queued: number
  /** Acknowledged by the service (202: committed). */
  committed: number
  /** Given up and reported to `onError`. */
  dropped: number
}

export interface TrackOptions {
  /** Events a batch holds; a full batch is sent at once (default 100, at most 500). */
  batchSize?: number
  /** Milliseconds the first waiting event waits for its batch to fill (default 1000). */
  flushInterval?: number
  /** Events held, waiting or being sent, before the oldest waiting is dropped (default 10,000). */
  maxQueueSize?: number
  /** First retry delay in ms (default 1000); it doubles with each failure of a batch, jittered. */
  minRetryDelay?: number
  /** Longest retry delay in ms (default 30,000), unless the service's `Retry-After` asks for longer. */
  maxRetryDelay?: number
  /** Told of every event given up (default: one `console.error` line a report). */
  onError?: (failure: DeliveryFailure) => void
  /** A number in [0, 1) for the jitter (default `Math.random`). */
  random?: () => number
}

export type SendBatch = (json: string, signal: AbortSignal) => Promise<Result<unknown>>

export const MAX_BATCH_SIZE = 500
// A request body is at most 1 MiB; batches stop short of it by length (a 413 still splits one).
const MAX_BATCH_CHARS = 1_000_000
// The service's 400 names the refused field of a batch in `error.field`: `events[3].timestamp`.
const REFUSED_EVENT = /^events\[(\d+)\]/

function defaultOnError(failure: DeliveryFailure): void {
  const cause = failure.error ? `: ${failure.error.code} (${failure.error.status}) ${failure.error.message}` : ''
  console.error(`keygate: ${failure.events.length} event(s) dropped, ${failure.reason}${cause}`)
}

/** Time kept at the end of a deadline for the last attempt's answer (less when the request timeout or the window is shorter). */
const ANSWER_ROOM_MS = 1000
/** Shortest wait between two attempts while a deadline nears (a shorter backoff is kept). */
const MIN_DEADLINE_GAP_MS = 250

/** A `flush(t)` or `shutdown(t)` waiting; `lastAttemptAt` is Infinity for a `flush()` without a timeout. */
interface Waiter {
  resolve: () => void
  startedAt: number
  lastAttemptAt: number
}

function checkTimeout(timeoutMs: number): void {
  if (!(timeoutMs >= 0)) throw new RangeError(`the timeout must be 0 or more milliseconds, not ${timeoutMs}`)
}

/**
 * The event queue behind `track()`: events are serialized at the call,
 * with their id and timestamp, so that every retry sends the same bytes; one batch is in
 * flight at a time, and it leaves the queue only when the service acknowledged it or
 * refused it for good.
 */
export class Delivery {
  private readonly batchSize: number
  private readonly flushInterval: number
  private readonly maxQueueSize: number
  private readonly minRetryDelay: number
  private readonly maxRetryDelay: number
  private readonly onError: (failure: DeliveryFailure) => void
  private readonly random: () => number

  private readonly waiting = new Deque<string>()
  /** The batch being sent, or waiting to be sent again. */
  private batch: string[] | null = null
  private sending: AbortController | null = null
  private firstWaitingAt = 0
  private failures = 0
  /** When the held batch's last attempt failed, its backoff wait then, and the end of the answer's `Retry-After`. */
  private failedAt = 0
  private backoff = 0
  private retryAfterUntil = 0
  private timer: unknown = null
  private timerAt = 0
  private closed = false
  private waiters: Waiter[] = []
  private overflow: string[] = []
  private committed = 0
  private dropped = 0
  private stampedAt = Number.NaN
  private stamp = ''

  constructor(
    private readonly send: SendBatch,
    private readonly clock: Clock,
    options: TrackOptions = {},
    /** The transport's timeout of one request: the last attempt before a deadline leaves it room, up to ANSWER_ROOM_MS. */
    private readonly requestTimeoutMs = 10_000,
  ) {
    this.batchSize = options.batchSize ?? 100
    this.flushInterval = options.flushInterval ?? 1000
    this.maxQueueSize = options.maxQueueSize ?? 10_000
    this.minRetryDelay = options.minRetryDelay ?? 1000
    this.maxRetryDelay = options.maxRetryDelay ?? 30_000
    this.onError = options.onError ?? defaultOnError
    this.random = options.random ?? Math.random
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1 || this.batchSize > MAX_BATCH_SIZE) {
      throw new RangeError(
        `batchSize must be an integer from 1 to ${MAX_BATCH_SIZE} (a request takes at most ${MAX_BATCH_SIZE} events), not ${this.batchSize}`,
      )
    }
    if (!Number.isInteger(this.maxQueueSize) || this.maxQueueSize < 1)
      throw new RangeError(`maxQueueSize must be a positive integer, not ${this.maxQueueSize}`)
    if (!(this.flushInterval >= 0)) throw new RangeError(`flushInterval must be 0 or more milliseconds, not ${this.flushInterval}`)
    if (!(this.minRetryDelay > 0 && this.maxRetryDelay >= this.minRetryDelay)) {
      throw new RangeError('minRetryDelay must be above 0 and maxRetryDelay at least minRetryDelay')
    }
  }

  /** Queues the event; answers its id. Throws only for what JSON cannot hold (a BigInt, a cycle). */
  track(event: TrackEvent): string {
    const now = this.clock.now()
    const id = event.id ?? uuidv7(now)
    if (now !== this.stampedAt) {
      this.stamp = new Date(now).toISOString()
      this.stampedAt = now
    }
    const timestamp = event.timestamp ?? this.stamp
    const json = JSON.stringify({ ...event, id, timestamp })
    if (this.closed) {
      this.report('shutdown', [json], null)
      return id
    }
    if (this.held() >= this.maxQueueSize) {
      const oldest = this.waiting.shift()
      this.overflowed(oldest ?? json)
      if (oldest === undefined) return id
    }
    if (this.waiting.length === 0) this.firstWaitingAt = now
    this.waiting.push(json)
    this.pump()
    return id
  }

  /**
   * Resolves once nothing is held (every event committed or reported to `onError`), or
   * once `timeoutMs` has passed: what is left then stays queued and is retried as before.
   * With a timeout, its time is spent as `shutdown(t)` spends it (see `retryAt`).
   */
  async flush(timeoutMs?: number): Promise<DeliveryStats> {
    await this.drain(timeoutMs ?? Number.POSITIVE_INFINITY)
    return this.stats()
  }

  /**
   * Takes no more events and flushes; after `timeoutMs` it stops waiting, cancels the
   * request in flight and reports what is left (`shutdown`). What a process calls on SIGTERM.
   */
  async shutdown(timeoutMs = 10_000): Promise<DeliveryStats> {
    checkTimeout(timeoutMs)
    this.closed = true
    if (!(await this.drain(timeoutMs))) this.giveUp()
    return this.stats()
  }

  stats(): DeliveryStats {
    return { queued: this.held(), committed: this.committed, dropped: this.dropped }
  }

  private held(): number {
    return this.waiting.length + (this.batch?.length ?? 0)
  }

  /** Sends what is held at once and resolves true when nothing is, or false when `timeoutMs` passed first. */
  private drain(timeoutMs: number): Promise<boolean> {
    checkTimeout(timeoutMs)
    if (this.held() === 0) return Promise.resolve(true)
    const startedAt = this.clock.now()
    const room = Math.min(ANSWER_ROOM_MS, this.requestTimeoutMs, timeoutMs / 2)
    return new Promise((resolve) => {
      let timer: unknown = null
      const waiter: Waiter = {
        startedAt,
        lastAttemptAt: startedAt + timeoutMs - room,
        resolve: () => {
          if (timer !== null) this.clock.clearTimeout(timer)
          resolve(true)
        },
      }
      this.waiters.push(waiter)
      if (Number.isFinite(timeoutMs)) {
        timer = this.clock.setTimeout(() => {
          this.waiters = this.waiters.filter((other) => other !== waiter)
          resolve(false)
          // Its deadline no longer shortens the waits: what is left goes back to the backoff.
          this.pump()
        }, timeoutMs)
      }
      this.pump()
    })
  }

  /** Sends when a batch is due and no request is in flight; otherwise sets the timer for when one will be. */
  private pump(): void {
    if (this.sending) return
    const now = this.clock.now()
    if (this.batch === null) {
      if (this.waiting.length === 0) {
        this.settle()
        return
      }
      const due = this.firstWaitingAt + this.flushInterval
      const draining = this.closed || this.waiters.length > 0
      if (this.waiting.length < this.batchSize && !draining && now < due) {
        this.wakeAt(due)
        return
      }
      this.batch = this.takeBatch(now)
    }
    const retryAt = this.retryAt()
    if (now >= retryAt) void this.sendBatch(this.batch)
    // No attempt left that could be answered in time: the deadline's timer ends the wait.
    else if (Number.isFinite(retryAt)) this.wakeAt(retryAt)
    else this.clearTimer()
  }

  /**
   * When the held batch may be sent again: after its backoff, never before `Retry-After`.
   * While a `shutdown(t)` or `flush(t)` waits, its deadline rules instead (the nearest, if
   * several): a backoff wait begun before the call is not kept; later ones are cut to a
   * quarter of the time left before the last attempt, so attempts come closer together as
   * the deadline nears, and none is made after the last attempt, which leaves the answer
   * room before the deadline. A `Retry-After` ending after it is kept: the deadline comes first.
   */
  private retryAt(): number {
    if (this.failures === 0) return Number.NEGATIVE_INFINITY
    let deadline: Waiter | undefined
    for (const waiter of this.waiters) if (waiter.lastAttemptAt < (deadline?.lastAttemptAt ?? Number.POSITIVE_INFINITY)) deadline = waiter
    if (deadline === undefined) return Math.max(this.failedAt + this.backoff, this.retryAfterUntil)
    const last = deadline.lastAttemptAt
    if (this.retryAfterUntil > last) return this.retryAfterUntil
    if (this.failedAt < deadline.startedAt) return Math.max(deadline.startedAt, this.retryAfterUntil)
    const gap = Math.min(this.backoff, Math.max(MIN_DEADLINE_GAP_MS, (last - this.failedAt) / 4))
    const at = Math.max(this.failedAt + gap, this.retryAfterUntil)
    if (at <= last) return at
    return this.failedAt < last ? last : Number.POSITIVE_INFINITY
  }

  private takeBatch(now: number): string[] {
    const batch: string[] = []
    let chars = 0
    while (batch.length < this.batchSize && this.waiting.length > 0) {
      const next = this.waiting.shift()!
      if (batch.length > 0 && chars + next.length > MAX_BATCH_CHARS) {
        this.waiting.putBack([next])
        break
      }
      batch.push(next)
      chars += next.length + 1
    }
    // Those left behind waited already; they go with the next batch, at most one interval on.
    if (this.waiting.length > 0) this.firstWaitingAt = now
    return batch
  }

  private async sendBatch(batch: string[]): Promise<void> {
    const controller = new AbortController()
    this.sending = controller
    this.clearTimer()
    let result: Result<unknown> | null
    try {
      result = await this.send(`{"events":[${batch.join(',')}]}`, controller.signal)
    } catch {
      result = null
    }
    this.sending = null
    // Given up meanwhile (shutdown's timeout): its events were reported already.
    if (this.batch === batch) this.settleBatch(batch, result)
    this.pump()
  }

  private settleBatch(batch: string[], result: Result<unknown> | null): void {
    if (result?.ok) {
      this.committed += batch.length
      this.batch = null
      this.failures = 0
      return
    }
    const error = result?.error ?? null
    if (error === null || error.retryable) {
      this.failures++
      this.failedAt = this.clock.now()
      this.backoff = this.backoffDelay()
      this.retryAfterUntil = this.failedAt + (error?.retryAfter ?? 0) * 1000
      return
    }
    if (error.status === 413 && batch.length > 1) {
      const half = Math.ceil(batch.length / 2)
      this.waiting.putBack(batch.slice(half))
      this.batch = batch.slice(0, half)
      return
    }
    const index = error.status === 400 && error.field !== null ? Number(REFUSED_EVENT.exec(error.field)?.[1] ?? Number.NaN) : Number.NaN
    if (Number.isInteger(index) && index < batch.length && batch.length > 1) {
      // One event refused: the others go again without it.
      this.report('refused', batch.splice(index, 1), error)
      return
    }
    this.batch = null
    this.report('refused', batch, error)
  }

  /** Jittered exponential backoff between the two bounds (`Retry-After` is kept apart, in `retryAfterUntil`). */
  private backoffDelay(): number {
    const ceiling = Math.min(this.maxRetryDelay, this.minRetryDelay * 2 ** (this.failures - 1))
    return Math.max(this.minRetryDelay, ceiling * (0.5 + this.random() / 2))
  }

  private giveUp(): void {
    const left = [...(this.batch ?? []), ...this.waiting.take(this.waiting.length)]
    this.batch = null
    this.failures = 0
    this.sending?.abort()
    if (left.length > 0) this.report('shutdown', left, null)
    this.settle()
  }

  private settle(): void {
    this.clearTimer()
    if (this.held() > 0) return
    for (const waiter of this.waiters.splice(0)) waiter.resolve()
  }

  private wakeAt(at: number): void {
    if (this.timer !== null && this.timerAt === at) return
    this.clearTimer()
    this.timerAt = at
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = null
        this.pump()
      },
      Math.max(0, at - this.clock.now()),
    )
  }

  private clearTimer(): void {
    if (this.timer === null) return
    this.clock.clearTimeout(this.timer)
    this.timer = null
  }

  /** Drops made to make room are reported together, once the caller's synchronous burst is over. */
  private overflowed(json: string): void {
    this.dropped++
    this.overflow.push(json)
    if (this.overflow.length === 1) queueMicrotask(() => this.tell('queue_full', this.overflow.splice(0), null))
  }

  private report(reason: DeliveryFailure['reason'], jsons: string[], error: KeygateError | null): void {
    this.dropped += jsons.length
    this.tell(reason, jsons, error)
  }

  private tell(reason: DeliveryFailure['reason'], jsons: string[], error: KeygateError | null): void {
    try {
      this.onError({ reason, error, events: jsons.map((json) => JSON.parse(json) as StampedEvent) })
    } catch {
      // A callback that throws must not stop delivery of the other events.
    }
  }
}
