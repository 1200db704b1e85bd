import type { Budget } from '../config.ts'
import { ApiError, type ErrorCode } from '../errors.ts'
import type { UsageRecorder } from '../usage/recorder.ts'
import { authorize, type AccessDecision, type RequestFacts } from './chain.ts'
import { budgetSubject, type ClientAddressOf, type PeerSource } from '../shared/client-address.ts'
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

export interface GateDeps {
  keys: KeyStore
  lastUsed: LastUsedRecorder
  rateLimits: RateLimitDeps
  now?: () => number
  /** Told each refusal's code (the metrics count them). */
  onRefusal?: (code: ErrorCode) => void
  /** Counts each request of a known key under its final answer (contract section 11). */
  usage?: UsageRecorder
}

/** Where a request's answer headers are written (Elysia's `set.headers`, or a direct route's own). */
export type AnswerHeaders = Record<string, string | number>

/**
 * One /api/v0 request as the gate sees it, built once by its caller (the `access` hooks,
 * or a direct route) and read by the chain (src/access/chain.ts `RequestFacts`) and the
 * budgets after it: one object a request, its Authorization header read once, its method
 * and client address only when asked (the method is only ever named in a refusal; the
 * address costs a system call, and only public keys' budgets and private keys' allowed
 * IPs need it).
 */
export class GateRequest implements RequestFacts {
  readonly authorization: string | null
  /** When the gate took the request, on the budgets' clock (set by `admit`). */
  at = 0
  /** The gate's rule for the client address (set by `admit`). */
  addressOf: ClientAddressOf | null = null
  #address: string | undefined = undefined

  constructor(
    readonly request: Request,
    /** The path as routed (for messages). */
    readonly path: string,
    /** The listening server, for the TCP peer; null under `app.handle`. */
    readonly server: PeerSource | null,
    /** The Origin header as sent, or null. */
    readonly origin: string | null,
    /** Where a private key's RateLimit-* headers go; null: an object is made for them when there are any. */
    public headers: AnswerHeaders | null,
  ) {
    this.authorization = request.headers.get('authorization')
  }

  get method(): string {
    return this.request.method
  }

  clientAddress(): string {
    return (this.#address ??= this.addressOf!(this.request, this.server))
  }
}

export interface Gate {
  /**
   * The access chain of contract section 3 and the budgets of section 8, in that order: the
   * granted caller, or an ApiError to answer. Synchronous unless the key must be read from
   * the database or the budget asked of Redis.
   */
  admit(request: GateRequest, rule: RouteAccess): AccessContext | Promise<AccessContext>
  /**
   * Counts a granted request under its final answer: a use is an answer in 2xx (contract
   * section 2), so a handler's 400 or 404 writes no lastUsedAt.
   */
  answered(access: AccessContext, rule: RouteAccess, status: number, errorCode: string | undefined): void
}

/**
 * The request-level access work, with nothing of HTTP frameworks: src/http/access-plugin.ts runs
 * it in Elysia's hooks, src/http/direct-route.ts inside one function for the hot routes.
 */
export function createGate(deps: GateDeps): Gate {
  const now = deps.now ?? Date.now
  const usage = deps.usage
  const { limiter, defaults, authFailures, clientAddress } = deps.rateLimits
  const clock = deps.rateLimits.clock ?? (() => performance.now())

  function admit(pending: GateRequest, rule: RouteAccess): AccessContext | Promise<AccessContext> {
    pending.at = clock()
    pending.addressOf = clientAddress
    // An address that drew too many invalid or expired keys is refused before any lookup.
    const wait = authFailures.active(pending.at) ? authFailures.blocked(pending.clientAddress(), pending.at) : null
    if (wait !== null) throw rateLimited(wait, 'Too many requests with unknown, revoked or expired keys came from this address')
    const decision = authorize(pending, rule, deps.keys, now())
    if (decision instanceof Promise) return decision.then((d) => settle(pending, d))
    return settle(pending, decision)
  }

  function settle(pending: GateRequest, decision: AccessDecision): AccessContext | Promise<AccessContext> {
    if (!decision.ok) {
      const { code, message, headers } = decision.denial
      deps.onRefusal?.(code)
      if (decision.key !== null && usage) {
        const at = now()
        usage.refused(decision.key.id, code, at)
        if (decision.refusedOrigin !== undefined) usage.origin(decision.key.id, decision.refusedOrigin, false, at)
        if (decision.reportedOrigin !== undefined) usage.origin(decision.key.id, decision.reportedOrigin, true, at)
        if (decision.refusedIp !== undefined) usage.ip(decision.key.id, decision.refusedIp, false, at)
        if (decision.reportedIp !== undefined) usage.ip(decision.key.id, decision.reportedIp, true, at)
      }
      if (code === 'invalid_api_key' || code === 'expired_api_key') authFailures.record(pending.clientAddress(), pending.at)
      throw new ApiError(code, message, headers)
    }
    const key = decision.key
    if (decision.reportedOrigin !== undefined) usage?.origin(key.id, decision.reportedOrigin, true, now())
    if (decision.reportedIp !== undefined) usage?.ip(key.id, decision.reportedIp, true, now())
    // A private key's budget is the key's; a public key's is each visitor's (section 8).
    const bucket = key.type === 'private' ? key.id : `${key.id} ${budgetSubject(pending.clientAddress())}`
    const outcome = limiter.take(bucket, key.rateLimit ?? defaults[key.type], pending.at)
    if (outcome instanceof Promise) return outcome.then((o) => grant(pending, key, o))
    return grant(pending, key, outcome)
  }

  function grant(pending: GateRequest, key: ActiveKey, outcome: RateLimitOutcome): AccessContext {
    if (!outcome.allowed) {
      deps.rateLimits.onLimited?.(key.type)
      usage?.refused(key.id, 'rate_limited', now())
      throw rateLimited(
        outcome.retryAfterSeconds,
        `This key's rate limit of ${outcome.limit} requests is used up`,
        rateLimitHeaders(outcome),
      )
    }
    if (key.type === 'private') Object.assign((pending.headers ??= {}), rateLimitHeaders(outcome))
    return { key, origin: pending.origin }
  }

  return {
    admit,
    answered(access, rule, status, errorCode) {
      const at = now()
      if (status >= 200 && status < 300) {
        deps.lastUsed.touch(access.key, at)
        usage?.accepted(access.key.id, rule.scope, at)
      } else usage?.refused(access.key.id, errorCode ?? `http_${status}`, at)
    },
  }
}
