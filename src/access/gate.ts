import { publicKeyCeiling, type Budget } from '../config.ts'
import { ApiError, type ErrorCode } from '../errors.ts'
import type { UsageRecorder } from '../usage/recorder.ts'
import { cachedBudgetSubjects } from '../shared/client-address.ts'
import { authorize, type AccessDecision, type RequestFacts } from './chain.ts'
import type { ActiveKey, KeyStore } from './key-store.ts'
import type { LastUsedRecorder } from './last-used.ts'
import { rateLimited, rateLimitHeaders } from './rate-limit/answer.ts'
import type { FailureBudget } from './rate-limit/failure-budget.ts'
import type { RateLimiter, RateLimitOutcome } from './rate-limit/limiter.ts'
import type { RouteAccess } from './scopes.ts'

/** A granted request: what a route handler learns about its caller. */
export interface Grant {
  readonly key: ActiveKey
  /** The Origin header as sent, or null. */
  readonly origin: string | null
  /** The RateLimit-* headers every answer to a private key carries (docs/api.md, "Rate limits"); null for public keys. */
  readonly rateLimitHeaders: Readonly<Record<string, string>> | null
}

export interface RateLimitDeps {
  limiter: RateLimiter
  /** The service defaults for keys whose `rateLimit` is null (RATE_LIMIT_PUBLIC/PRIVATE). */
  defaults: Record<ActiveKey['type'], Budget>
  /** Failed authentications per client address (RATE_LIMIT_API_AUTH_FAILURES). */
  authFailures: FailureBudget
  /** Called for each request refused for its budget (metrics). */
  onLimited?: (keyType: ActiveKey['type']) => void
  /** Milliseconds on a clock that never jumps (default performance.now): a wall clock set back would hold a spent budget. */
  clock?: () => number
}

export interface GateDeps {
  keys: KeyStore
  lastUsed: LastUsedRecorder
  rateLimits: RateLimitDeps
  now?: () => number
  /** Told each refusal's code (the metrics count them). */
  onRefusal?: (code: ErrorCode) => void
  /** Counts each request of a known key under its final answer. */
  usage?: UsageRecorder
  /** A private key arrived with an Origin header: from a browser, where it is anyone's to read (src/leaks/browser-use.ts). */
  onBrowserUse?: (key: ActiveKey, origin: string, at: number) => void
}

export interface Gate {
  /**
   * The key chain (docs/api.md, "Calling the API"), then the budgets (docs/api.md, "Rate
   * limits"): the grant, or a rejection with the ApiError to answer.
   */
  check(request: RequestFacts, rule: RouteAccess): Promise<Grant>
  /** Counts a granted request under its final answer: only a 2xx is a use. */
  count(grant: Grant, rule: RouteAccess, status: number, errorCode: string | undefined): void
}

/** The refusals that count toward a client address's failure budget (docs/api.md, "Rate limits"), with any denial marked `budgeted`. */
const BUDGETED_FAILURES: ReadonlySet<ErrorCode> = new Set(['invalid_api_key', 'expired_api_key', 'origin_not_allowed', 'ip_not_allowed'])

/**
 * The request-level access work, with nothing of HTTP: src/http/key-chain-plugin.ts runs it
 * in Elysia's hooks, src/http/direct-route.ts in one function for the hot routes.
 */
export function createGate(deps: GateDeps): Gate {
  const now = deps.now ?? Date.now
  const usage = deps.usage
  const { limiter, defaults, authFailures } = deps.rateLimits
  const clock = deps.rateLimits.clock ?? (() => performance.now())
  const visitorOf = cachedBudgetSubjects()

  async function check(request: RequestFacts, rule: RouteAccess): Promise<Grant> {
    const arrived = clock()
    // An address that drew too many failures is refused before any key lookup.
    const wait = authFailures.active(arrived) ? authFailures.blocked(request.clientAddress(), arrived) : null
    if (wait !== null)
      throw rateLimited(
        wait,
        'Too many requests with unknown, revoked or expired keys or refused origins or addresses came from this address',
      )
    const decision = await authorize(request, rule, deps.keys, now())
    // The key meets its budget when it is known: a key read from the database arrives after
    // requests that came later may have taken from it, and GCRA must never see its clock go back.
    return budget(request, decision, clock())
  }

  /** A refusal of the chain is counted and thrown; a granted key then meets its budget. */
  async function budget(request: RequestFacts, decision: AccessDecision, at: number): Promise<Grant> {
    if (decision.key !== null) noteBrowserUse(decision.key, request.origin)
    if (!decision.ok) refuse(request, decision, at)
    const { key } = decision
    if (decision.reportedOrigin !== undefined) usage?.origin(key.id, decision.reportedOrigin, true, now())
    if (decision.reportedIp !== undefined) usage?.ip(key.id, decision.reportedIp, true, now())
    const own = key.rateLimit ?? defaults[key.type]
    // A private key's budget is the key's (docs/api.md, "Rate limits").
    if (key.type === 'private') return grant(request, key, await limiter.take(key.id, own, at))
    // A public key's is each visitor's, so that one visitor never spends a site's budget for
    // the others; then the key's ceiling over all of them, so that many addresses together
    // cannot either (src/config.ts, publicKeyCeiling). A visitor over its own budget is
    // refused before it counts toward the ceiling.
    const visitor = await limiter.take(`${key.id} ${visitorOf(request.clientAddress())}`, own, at)
    if (!visitor.allowed) return grant(request, key, visitor)
    return grant(request, key, await limiter.take(`${key.id} all`, publicKeyCeiling(own), at), 'ceiling')
  }

  /** Its origins are kept as those a key's list does not allow, served (a private key allows none). */
  function noteBrowserUse(key: ActiveKey, origin: string | null): void {
    if (key.type !== 'private' || origin === null) return
    const time = now()
    usage?.origin(key.id, origin, true, time)
    deps.onBrowserUse?.(key, origin, time)
  }

  function refuse(request: RequestFacts, decision: AccessDecision & { ok: false }, at: number): never {
    const { code, message } = decision.denial
    let headers = decision.denial.headers
    deps.onRefusal?.(code)
    if (decision.key !== null && usage) {
      const keyId = decision.key.id
      const time = now()
      usage.refused(keyId, code, time)
      if (decision.refusedOrigin !== undefined) usage.origin(keyId, decision.refusedOrigin, false, time)
      if (decision.reportedOrigin !== undefined) usage.origin(keyId, decision.reportedOrigin, true, time)
      if (decision.refusedIp !== undefined) usage.ip(keyId, decision.refusedIp, false, time)
      if (decision.reportedIp !== undefined) usage.ip(keyId, decision.reportedIp, true, time)
    }
    if (decision.denial.budgeted || BUDGETED_FAILURES.has(code)) authFailures.record(request.clientAddress(), at)
    // Every answer to a private key carries its budget, a refusal before it too.
    const key = decision.key
    if (key !== null && key.type === 'private') {
      headers = { ...headers, ...rateLimitHeaders(limiter.peek(key.id, key.rateLimit ?? defaults.private, at)) }
    }
    throw new ApiError(code, message, { headers })
  }

  function grant(request: RequestFacts, key: ActiveKey, outcome: RateLimitOutcome, budget: 'own' | 'ceiling' = 'own'): Grant {
    if (!outcome.allowed) {
      deps.rateLimits.onLimited?.(key.type)
      usage?.refused(key.id, 'rate_limited', now())
      throw rateLimited(
        outcome.retryAfterSeconds,
        budget === 'ceiling'
          ? `This public key's ceiling of ${outcome.limit} requests from all its visitors together is used up`
          : `This key's rate limit of ${outcome.limit} requests is used up`,
        rateLimitHeaders(outcome),
      )
    }
    return { key, origin: request.origin, rateLimitHeaders: key.type === 'private' ? rateLimitHeaders(outcome) : null }
  }

  return {
    check,
    count(grant, rule, status, errorCode) {
      const at = now()
      if (status >= 200 && status < 300) {
        deps.lastUsed.touch(grant.key, at)
        usage?.accepted(grant.key.id, rule.scope, at)
      } else usage?.refused(grant.key.id, errorCode ?? `http_${status}`, at)
    },
  }
}
