import type { Clock } from '../src/clock.ts'
import type { Fetch } from '../src/http.ts'
import { createClient, type DeliveryFailure } from '../src/index.ts'

const MAX_TIMER_MS = 2 ** 31 - 1

/** A clock that moves only when told: timers fire in order as `advance` passes them. */
export class FakeClock implements Clock {
  time = Date.parse('2026-11-27T10:00:00.000Z')
  private readonly timers = new Map<number, { at: number; callback: () => void }>()
  private nextHandle = 1

  now(): number {
    return this.time
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const handle = this.nextHandle++
    // As Node and Bun do: a delay that does not fit in 32 bits (Infinity among them) fires after 1 ms.
    const delay = ms > MAX_TIMER_MS ? 1 : Math.max(0, ms)
    this.timers.set(handle, { at: this.time + delay, callback })
    return handle
  }

  /** Timers set and not yet fired or cleared: each one would keep a process alive. */
  get pendingTimers(): number {
    return this.timers.size
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number)
  }

  /** Moves time on by `ms`, firing each timer due on the way at its own time. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms
    await settle()
    for (;;) {
      const due = [...this.timers].filter(([, timer]) => timer.at <= end).sort(([, a], [, b]) => a.at - b.at)[0]
      if (!due) break
      this.timers.delete(due[0])
      this.time = due[1].at
      due[1].callback()
      await settle()
    }
    this.time = end
    await settle()
  }
}

/** Lets every promise chain that can run, run: a turn of the event loop, no time. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

export interface SeenRequest {
  at: number
  method: string
  url: URL
  headers: Headers
  body: string | undefined
}

type Answer = Response | Error | 'hang'

/** A `fetch` that records each request and answers with `respond`'s answer. */
export function scriptedFetch(clock: Clock, respond: (request: SeenRequest, index: number) => Answer) {
  const requests: SeenRequest[] = []
  const fetch: Fetch = async (url, init) => {
    const request: SeenRequest = {
      at: clock.now(),
      method: init?.method ?? 'GET',
      url: new URL(url),
      headers: new Headers(init?.headers),
      body: typeof init?.body === 'string' ? init.body : undefined,
    }
    requests.push(request)
    const answer = respond(request, requests.length - 1)
    if (answer === 'hang') {
      return new Promise<Response>((_, reject) => {
        init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')))
      })
    }
    if (answer instanceof Error) throw answer
    return answer
  }
  return { fetch, requests }
}

/** An answer as the service gives it: JSON, `X-Request-Id`, extra headers. */
export function answer(status: number, body?: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': `req_${status}`, ...headers },
  })
}

export function refusal(status: number, code: string, message: string, headers: Record<string, string> = {}, field?: string): Response {
  return answer(status, { error: { code, message, requestId: `req_${status}`, ...(field === undefined ? {} : { field }) } }, headers)
}

/** The events of a request sent by `track()`. */
export function eventsOf(request: SeenRequest): { id: string; timestamp: string; eventType: string; [field: string]: unknown }[] {
  return JSON.parse(request.body ?? '{}').events
}

export const KEY = 'sk_0123456789abcdefghijABCDEFGHIJ'

/**
 * A client on a fake clock and a scripted fetch, for track()'s tests: jitter fixed at 0.5,
 * what is given up recorded in `failures`.
 */
export function trackingClient(respond: (request: SeenRequest, index: number) => Answer, options: Record<string, unknown> = {}) {
  const clock = new FakeClock()
  const { fetch, requests } = scriptedFetch(clock, respond)
  const failures: DeliveryFailure[] = []
  const client = createClient({
    key: KEY,
    baseUrl: 'http://keygate.test',
    fetch,
    clock,
    random: () => 0.5,
    onError: (failure) => failures.push(failure),
    ...options,
  })
  return { clock, requests, failures, client }
}

/** The service's 202 for a batch: every event accepted. */
export const accepted = (request: SeenRequest) => answer(202, { accepted: eventsOf(request).length })
