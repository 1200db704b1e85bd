import type { UsageRecorder } from '../usage/recorder.ts'
import { Elysia } from 'elysia'
import type { Budget } from '../config.ts'
import { ApiError, type ErrorCode } from '../errors.ts'
import { parseJsonBody } from '../http/json-body.ts'
import { stampApiAnswer } from '../http/request-context.ts'
import { statusOf } from '../http/status.ts'
import { authorize, type AccessDecision } from './chain.ts'
import { budgetSubject, type ClientAddressOf, type PeerSource } from './client-address.ts'
import type { ActiveKey, KeyStore } from './key-store.ts'
import type { LastUsedRecorder } from './last-used.ts'
import { rateLimited, rateLimitHeaders } from './rate-limit/answer.ts'
import type { FailureBudget, RateLimiter, RateLimitOutcome } from './rate-limit/limiter.ts'
import type { RouteAccess } from './scopes.ts'

/** What a route handler learns about its caller. */
export interface AccessContext {
  readonly key: ActiveKey
  /** The Origin header as sent, or null. */
  readonly origin: string | null
}

export const MAX_BODY_BYTES = 1024 * 1024

/** Where a granted request's AccessContext waits between the chain's hooks. */
const DECIDED = Symbol('access decided')

/** The id of the key a request was granted with, for the request log; undefined when none was. */
export function decidedKeyId(set: object): string | undefined {
  return (set as { [DECIDED]?: AccessContext })[DECIDED]?.key.id
}

export interface RateLimitDeps {
  limiter: RateLimiter
  /** The service defaults for keys whose `rateLimit` is null (RATE_LIMIT_PUBLIC/PRIVATE). */
  defaults: Record<ActiveKey['type'], Budget>
  /** invalid_api_key and expired_api_key answers per client address (RATE_LIMIT_API_AUTH_FAILURES). */
  authFailures: FailureBudget
  clientAddress: ClientAddressOf
  /** Called for each request refused for its budget (metrics). */
  onLimited?: (keyType: ActiveKey['type']) => void
  /**
   * Milliseconds on a clock that never jumps (default performance.now): budgets measure
   * durations, and a wall clock set back would hold a budget spent for that long.
   */
  clock?: () => number
}

/**
 * The `access` route option: `{ access: { scope: 'ANALYTICS_WRITE', public: true } }`.
 *
 * Elysia parses a body before `transform`, and validates before `resolve`, so the chain
 * runs in the earliest hook a route has: `parse` for requests with a body (refused before
 * the body is read), `transform` for the rest (refused before query validation). Only
 * once validation has passed does `resolve` hand the key to the handler; the use is
 * counted only for an answer in 2xx, so a refused request writes nothing, not even
 * `lastUsedAt`.
 *
 * Hooks destructure what they read: Elysia infers from a hook's parameters which parts
 * of the context to build, and a hook that takes the whole context makes it build all of
 * them (headers object, query) on every request, about 2 µs. The decision therefore
 * travels from hook to hook under a symbol on `set`, the one plain object Elysia keeps
 * per request (a WeakMap keyed by the request measured 0.3 µs slower under load).
 */
export function createAccessPlugin(deps: {
  keys: KeyStore
  lastUsed: LastUsedRecorder
  rateLimits: RateLimitDeps
  now?: () => number
  /** Told each refusal's code (the metrics count them). */
  onRefusal?: (code: ErrorCode) => void
  /** Counts each request of a known key under its final answer (contract section 11). */
  usage?: UsageRecorder
}) {
  const now = deps.now ?? Date.now
  const usage = deps.usage
  const { limiter, defaults, authFailures, clientAddress } = deps.rateLimits
  const clock = deps.rateLimits.clock ?? (() => performance.now())

  type Stamped = Parameters<typeof stampApiAnswer>[0] & { [DECIDED]?: AccessContext }

  /** The request's facts the checks after the key need; the address is found only when asked. */
  interface Pending {
    request: Request
    server: PeerSource | null
    set: Stamped
    origin: string | null
    /** On the budgets' clock. */
    at: number
    address: string | undefined
  }

  function addressOf(pending: Pending): string {
    return (pending.address ??= clientAddress(pending.request, pending.server))
  }

  function check(request: Request, path: string, set: Stamped, server: PeerSource | null, rule: RouteAccess): void | Promise<void> {
    if (set[DECIDED] !== undefined) return
    const headers = request.headers
    const origin = headers.get('origin')
    // First, so refusals carry the request id and the Origin echo too.
    stampApiAnswer(set, origin)
    const pending: Pending = { request, server, set, origin, at: clock(), address: undefined }
    // An address that drew too many invalid or expired keys is refused before any lookup.
    const wait = authFailures.active(pending.at) ? authFailures.blocked(addressOf(pending), pending.at) : null
    if (wait !== null) throw rateLimited(wait, 'Too many requests with unknown, revoked or expired keys came from this address')
    const decision = authorize(
      { authorization: headers.get('authorization'), origin, method: request.method, path },
      rule,
      deps.keys,
      now(),
    )
    if (decision instanceof Promise) return decision.then((d) => settle(pending, d))
    return settle(pending, decision)
  }

  function settle(pending: Pending, decision: AccessDecision): void | Promise<void> {
    if (!decision.ok) {
      const { code, message, headers } = decision.denial
      deps.onRefusal?.(code)
      if (decision.key !== null && usage) {
        const at = now()
        usage.refused(decision.key.id, code, at)
        if (decision.refusedOrigin !== undefined) usage.origin(decision.key.id, decision.refusedOrigin, false, at)
        if (decision.reportedOrigin !== undefined) usage.origin(decision.key.id, decision.reportedOrigin, true, at)
      }
      if (code === 'invalid_api_key' || code === 'expired_api_key') authFailures.record(addressOf(pending), pending.at)
      throw new ApiError(code, message, headers)
    }
    const key = decision.key
    if (decision.reportedOrigin !== undefined) usage?.origin(key.id, decision.reportedOrigin, true, now())
    // A private key's budget is the key's; a public key's is each visitor's (section 8).
    const bucket = key.type === 'private' ? key.id : `${key.id} ${budgetSubject(addressOf(pending))}`
    const outcome = limiter.take(bucket, key.rateLimit ?? defaults[key.type], pending.at)
    if (outcome instanceof Promise) return outcome.then((o) => admit(pending, key, o))
    admit(pending, key, outcome)
  }

  function admit(pending: Pending, key: ActiveKey, outcome: RateLimitOutcome): void {
    if (!outcome.allowed) {
      deps.rateLimits.onLimited?.(key.type)
      usage?.refused(key.id, 'rate_limited', now())
      throw rateLimited(
        outcome.retryAfterSeconds,
        `This key's rate limit of ${outcome.limit} requests is used up`,
        rateLimitHeaders(outcome),
      )
    }
    if (key.type === 'private') Object.assign(pending.set.headers, rateLimitHeaders(outcome))
    pending.set[DECIDED] = { key, origin: pending.origin }
  }

  return new Elysia({ name: 'access' }).macro({
    access: (rule: RouteAccess) => ({
      // The rule also lands in the route's OpenAPI entry, so the reference shows the
      // endpoint-to-scope table, and tests can enumerate it from `app.routes`.
      detail: {
        'x-access': rule,
        security: [{ apiKey: [] }],
        description: `Scope: ${rule.scope ?? 'none (any valid key)'}. Public keys: ${rule.public ? 'allowed' : 'refused'}.`,
      } as Record<string, unknown>,
      // screenBody parses every body itself; Elysia's JSON parser is named after it so
      // the API reference shows the content type (Elysia's macro typing omits named
      // parsers, which its runtime takes).
      parse: [
        function screenRequest({
          request,
          path,
          set,
          server,
        }: {
          request: Request
          path: string
          set: Stamped
          server: PeerSource | null
        }) {
          const checked = check(request, path, set, server, rule)
          if (checked) return checked.then(() => admitBody(request, set, rule))
          return admitBody(request, set, rule)
        },
        'json',
      ] as unknown as (context: { request: Request; path: string; set: Stamped; server: PeerSource | null }) => undefined,
      transform({ request, path, set, server }) {
        return check(request, path, set, server, rule)
      },
      resolve({ set }) {
        return { access: (set as Stamped)[DECIDED]! }
      },
      // A use is an answer in 2xx (contract section 2): a handler's 400, an unknown list's
      // 404 or a 422 writes no lastUsedAt. mapResponse sees every answer's final value.
      mapResponse({ set, responseValue }) {
        const access = (set as Stamped)[DECIDED]
        if (access === undefined) return
        const status = statusOf(responseValue, set.status)
        const at = now()
        if (status >= 200 && status < 300) {
          deps.lastUsed.touch(access.key, at)
          usage?.accepted(access.key.id, rule.scope, at)
        } else usage?.refused(access.key.id, errorCodeOf(responseValue, status), at)
      },
    }),
  })
}

/** The `error.code` of an error answer (src/http/errors.ts renders them as objects), else `http_<status>`. */
function errorCodeOf(value: unknown, status: number): string {
  const code = (value as { error?: { code?: unknown } } | null)?.error?.code
  return typeof code === 'string' ? code : `http_${status}`
}

/** The route's admission check (if any), then the body. */
function admitBody(request: Request, set: { [DECIDED]?: AccessContext }, rule: RouteAccess) {
  rule.admit?.(set[DECIDED]!.key)
  return screenBody(request)
}

/**
 * 413 and 415 come after the key checks (an anonymous caller learns nothing) and before
 * parsing. The body is read here (one without a Content-Length, chunked, stopping at the
 * limit) and parsed by src/http/json-body.ts, which refuses deep nesting before JSON.parse
 * and strings PostgreSQL cannot store; its value becomes the body. No body at all becomes
 * null.
 */
function screenBody(request: Request): null | undefined | Promise<unknown> {
  // No body at all: answer null so the JSON parser named after this hook is not run on
  // nothing (it would refuse an empty body even where the route takes none).
  if (request.body === null) return null
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > MAX_BODY_BYTES) throw tooLarge(`${length} bytes`)
  if (length === '0') return null
  const type = request.headers.get('content-type')
  if (type === null || !/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError(
      'unsupported_media_type',
      `The body was sent as ${type ?? 'no Content-Type'}; send JSON with the header "Content-Type: application/json".`,
    )
  }
  return length === null ? readJsonWithin(request.body, MAX_BODY_BYTES) : request.text().then(parseJsonBody)
}

async function readJsonWithin(stream: ReadableStream<Uint8Array>, limit: number): Promise<unknown> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of stream) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge('more than that')
    chunks.push(chunk)
  }
  return parseJsonBody(Buffer.concat(chunks).toString('utf8'))
}

function tooLarge(seen: string): ApiError {
  return new ApiError(
    'payload_too_large',
    `The body has ${seen}; the limit is ${MAX_BODY_BYTES} bytes (1 MiB). Send fewer events or records per request.`,
  )
}
