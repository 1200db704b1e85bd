import type { Clock } from './clock.ts'
import { KeygateError } from './errors.ts'
import { type CallOptions, camelCase, type Route, routes } from './operations.ts'

/** A key's budget as the answer's `RateLimit-*` headers state it. */
export interface RateLimit {
  /** Requests the budget holds (`RateLimit-Limit`). */
  limit: number
  /** Requests left in it now (`RateLimit-Remaining`). */
  remaining: number
  /** Seconds until it is whole again (`RateLimit-Reset`). */
  reset: number
}

interface Answered {
  /** The HTTP status; 0 when no answer came. */
  status: number
  requestId: string | null
  /** Private keys' answers always carry it; public keys' only when refused for the budget. */
  rateLimit: RateLimit | null
  /** The answer's headers (null when no answer came), e.g. `Idempotent-Replayed`. */
  headers: Headers | null
}

export type Success<T> = Answered & { ok: true; data: T; error?: undefined }
export type Failure = Answered & { ok: false; data?: undefined; error: KeygateError }
/** Every call resolves to one of these; it never throws for a refusal or a network failure. */
export type Result<T> = Success<T> | Failure

/** What the client needs of `fetch`; the runtime's own is one. */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>

export interface Transport {
  baseUrl: string
  key: string
  fetch: Fetch
  clock: Clock
  /** Milliseconds a call may take, answer body included. */
  timeoutMs: number
  headers: Record<string, string>
}

export interface CallInput {
  params?: Record<string, unknown>
  /** A value to send as JSON. */
  body?: unknown
  /** A body already serialized (the event queue keeps events as JSON text). */
  json?: string
  options?: CallOptions
}

/** One call of an /api/v0 operation, as the generated table describes it. */
export async function call(transport: Transport, route: Route, input: CallInput = {}): Promise<Result<unknown>> {
  const shape = routes[route]
  const space = route.indexOf(' ')
  const method = route.slice(0, space)
  const params = input.params ?? {}
  const path = route.slice(space + 1).replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined || value === null) throw new TypeError(`${route}: the path parameter "${name}" is missing`)
    return encodeURIComponent(String(value))
  })
  const query = new URLSearchParams()
  for (const name of shape.query as readonly string[]) {
    const value = params[name]
    if (value !== undefined && value !== null) query.append(name, String(value))
  }
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...transport.headers,
    ...input.options?.headers,
    authorization: `Bearer ${transport.key}`,
  }
  for (const name of shape.header as readonly string[]) {
    const value = params[camelCase(name)]
    if (value !== undefined && value !== null) headers[name] = String(value)
  }
  const body = input.json ?? (input.body === undefined ? undefined : JSON.stringify(input.body))
  if (body !== undefined) headers['content-type'] = 'application/json'
  const search = query.toString()
  const url = transport.baseUrl + path + (search ? `?${search}` : '')

  const controller = new AbortController()
  let timedOut = false
  const timer = transport.clock.setTimeout(() => {
    timedOut = true
    controller.abort()
  }, transport.timeoutMs)
  const callerSignal = input.options?.signal
  const abortWithCaller = () => controller.abort()
  if (callerSignal?.aborted) controller.abort()
  callerSignal?.addEventListener('abort', abortWithCaller)

  let response: Response
  let text: string
  try {
    response = await transport.fetch(url, { method, headers, body, signal: controller.signal })
    text = await response.text()
  } catch (error) {
    const code = timedOut ? 'timeout' : callerSignal?.aborted ? 'aborted' : 'network_error'
    const message =
      code === 'timeout'
        ? `${method} ${path}: no answer within ${transport.timeoutMs} ms`
        : `${method} ${path}: ${error instanceof Error ? error.message : String(error)}`
    return {
      ok: false,
      status: 0,
      requestId: null,
      rateLimit: null,
      headers: null,
      error: new KeygateError({ code, message, status: 0, requestId: null, retryAfter: null }),
    }
  } finally {
    transport.clock.clearTimeout(timer)
    callerSignal?.removeEventListener('abort', abortWithCaller)
  }

  const answered: Answered = {
    status: response.status,
    requestId: response.headers.get('x-request-id'),
    rateLimit: rateLimitOf(response.headers),
    headers: response.headers,
  }
  const parsed = parseJson(text)
  if (response.ok) {
    if (text === '') return { ...answered, ok: true, data: undefined }
    if (parsed.ok) return { ...answered, ok: true, data: parsed.value }
  }
  return { ...answered, ok: false, error: errorOf(response, answered, parsed, transport.clock.now()) }
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** The service's envelope `{"error": {"code", "message", "requestId", "field"?}}`, or what stood in its place. */
function errorOf(response: Response, answered: Answered, parsed: ReturnType<typeof parseJson>, now: number): KeygateError {
  const retryAfter = retryAfterOf(response.headers.get('retry-after'), now)
  const envelope = parsed.ok
    ? (parsed.value as { error?: { code?: unknown; message?: unknown; requestId?: unknown; field?: unknown } } | null)?.error
    : undefined
  if (envelope && typeof envelope.code === 'string' && typeof envelope.message === 'string') {
    return new KeygateError({
      code: envelope.code as KeygateError['code'],
      message: envelope.message,
      status: response.status,
      requestId: typeof envelope.requestId === 'string' ? envelope.requestId : answered.requestId,
      retryAfter,
      field: typeof envelope.field === 'string' ? envelope.field : null,
    })
  }
  const what = response.ok ? 'a body that is not JSON' : 'no error envelope'
  return new KeygateError({
    code: 'unexpected_response',
    message: `HTTP ${response.status} with ${what} (${response.headers.get('content-type') ?? 'no content type'}); not the keygate service, or a proxy in front of it answered`,
    status: response.status,
    requestId: answered.requestId,
    retryAfter,
  })
}

function rateLimitOf(headers: Headers): RateLimit | null {
  const limit = headers.get('ratelimit-limit')
  const remaining = headers.get('ratelimit-remaining')
  const reset = headers.get('ratelimit-reset')
  if (limit === null || remaining === null || reset === null) return null
  const figures = { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) }
  return Object.values(figures).every(Number.isFinite) ? figures : null
}

/** `Retry-After` in seconds: whole seconds, or an HTTP date. */
export function retryAfterOf(value: string | null, now: number): number | null {
  if (value === null || value.trim() === '') return null
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds)
  const at = Date.parse(value)
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : null
}
