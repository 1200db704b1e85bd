import { ApiError } from '../../errors.ts'
import type { RateLimitOutcome } from './limiter.ts'

/** The three RateLimit-* headers (docs/api.md, "Rate limits"). */
export function rateLimitHeaders(outcome: RateLimitOutcome): Record<string, string> {
  return {
    'ratelimit-limit': String(outcome.limit),
    'ratelimit-remaining': String(outcome.remaining),
    'ratelimit-reset': String(outcome.resetSeconds),
  }
}

/** 429 `rate_limited`: what was exceeded and when to retry. */
export function rateLimited(retryAfterSeconds: number, what: string, headers?: Record<string, string>): ApiError {
  return new ApiError(
    'rate_limited',
    `${what}. Retry after ${retryAfterSeconds} s (the Retry-After header); spread requests out, or ask for a higher limit on the key.`,
    { headers: { ...headers, 'retry-after': String(retryAfterSeconds) } },
  )
}
