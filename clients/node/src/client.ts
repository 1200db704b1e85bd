import { type Clock, systemClock } from './clock.ts'
import { Delivery, type DeliveryStats, type TrackEvent, type TrackOptions } from './delivery.ts'
import { call, type Fetch, type Result, type Transport } from './http.ts'
import { type Args, type Data, type MethodName, operations, type Route, routes } from './operations.ts'

export interface ClientOptions extends TrackOptions {
  /**
   * A private key (`sk_…`), as a backend holds it. A public key (`pk_…`) reaches the public
   * endpoints only, and only with an allowed `Origin` in `headers`.
   */
  key: string
  /** Where the service answers, e.g. `https://api.example.com`. */
  baseUrl: string
  /** Milliseconds a call may take, its answer included (default 10,000); then it fails as `timeout`. */
  timeoutMs?: number
  /** Headers sent with every call. */
  headers?: Record<string, string>
  /** The `fetch` to call (default: the runtime's own). */
  fetch?: Fetch
  /** Time and timers (default: the system's); tests hand in their own. */
  clock?: Clock
}

/** One method per /api/v0 operation, named in `operations.ts`, typed from the OpenAPI document. */
export type ApiMethods = {
  [N in MethodName]: (...args: Args<(typeof operations)[N]>) => Promise<Result<Data<(typeof operations)[N]>>>
}

export interface KeygateClient extends ApiMethods {
  /**
   * Queues an event for delivery, with its `id` (a UUIDv7) and `timestamp` set now unless
   * given; answers the id. Batches are sent by count or time and retried until the service
   * commits them; an event is dropped only when refused for good or when the queue is full,
   * and then reported to `onError`.
   */
  track(event: TrackEvent): string
  /**
   * Resolves once every queued event is committed or reported to `onError`, or once
   * `timeoutMs` has passed (what is left stays queued); a timeout spends its time as
   * `shutdown(timeoutMs)` does. Answers `stats()`.
   */
  flush(timeoutMs?: number): Promise<DeliveryStats>
  /**
   * Stops taking events and flushes for at most `timeoutMs` (default 10,000); call it on
   * SIGTERM. It sends at once, retries more often as the deadline nears, and makes its
   * last attempt early enough to be answered before it.
   */
  shutdown(timeoutMs?: number): Promise<DeliveryStats>
  /** Events held now, committed and dropped so far. */
  stats(): DeliveryStats
}

const KEY_FORMAT = /^(pk|sk)_[A-Za-z0-9]{20,40}$/

export function createClient(options: ClientOptions): KeygateClient {
  if (typeof options.key !== 'string' || !KEY_FORMAT.test(options.key)) {
    throw new TypeError('key must be a keygate key: "sk_" (private) or "pk_" (public) followed by 20 to 40 letters and digits')
  }
  const base = new URL(options.baseUrl)
  const clock = options.clock ?? systemClock
  const transport: Transport = {
    baseUrl: base.href.replace(/\/+$/, ''),
    key: options.key,
    fetch: options.fetch ?? ((url, init) => fetch(url, init)),
    clock,
    timeoutMs: options.timeoutMs ?? 10_000,
    headers: options.headers ?? {},
  }
  const delivery = new Delivery(
    (json, signal) => call(transport, 'POST /api/v0/analytics', { json, options: { signal } }),
    clock,
    options,
    transport.timeoutMs,
  )

  const methods: Record<string, unknown> = {}
  for (const [name, route] of Object.entries(operations) as [MethodName, Route][]) {
    const shape = routes[route]
    const takesParams = shape.path.length + shape.query.length + shape.header.length > 0
    const takesBody = shape.body !== 'none'
    methods[name] = (...args: unknown[]) => {
      let next = 0
      const params = takesParams ? (args[next++] as Record<string, unknown> | undefined) : undefined
      const body = takesBody ? args[next++] : undefined
      return call(transport, route, { params, body, options: args[next] as never })
    }
  }

  return {
    ...(methods as ApiMethods),
    track: (event) => delivery.track(event),
    flush: (timeoutMs) => delivery.flush(timeoutMs),
    shutdown: (timeoutMs) => delivery.shutdown(timeoutMs),
    stats: () => delivery.stats(),
  }
}
