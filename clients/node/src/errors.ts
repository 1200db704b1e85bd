import type { components } from './api.ts'

/** The service's error codes (its `ErrorCode` schema): each maps to one HTTP status. */
export type ErrorCode = components['schemas']['ErrorCode']

/**
 * Failures the client sees without an answer from the service (status 0): `network_error`
 * (refused, reset, name not found), `timeout` (no answer within the client's `timeoutMs`),
 * `aborted` (the caller's signal); and `unexpected_response`, an answer that is not the
 * service's JSON (a proxy's HTML 502, say), which keeps its status.
 */
export type ClientErrorCode = 'network_error' | 'timeout' | 'aborted' | 'unexpected_response'

export interface KeygateErrorFields {
  code: ErrorCode | ClientErrorCode
  message: string
  /** The HTTP status; 0 when no answer came. */
  status: number
  /** The answer's `X-Request-Id` (also in the error body): quote it when asking about a request. */
  requestId: string | null
  /** Seconds the answer's `Retry-After` asks to wait (429, 503), else null. */
  retryAfter: number | null
  /**
   * On a 400 about one field, its path as the service names it (`events[3].timestamp`,
   * `email`, `limit`); null otherwise. Programs read this, never the message's words.
   */
  field?: string | null
}

/** A refusal or a failed call, returned as a value (`result.error`), never thrown by the client. */
export class KeygateError extends Error implements KeygateErrorFields {
  override readonly name = 'KeygateError'
  readonly code: ErrorCode | ClientErrorCode
  readonly status: number
  readonly requestId: string | null
  readonly retryAfter: number | null
  readonly field: string | null

  constructor(fields: KeygateErrorFields) {
    super(fields.message)
    this.code = fields.code
    this.status = fields.status
    this.requestId = fields.requestId
    this.retryAfter = fields.retryAfter
    this.field = fields.field ?? null
  }

  /** Worth sending again unchanged: no answer, 408, 429 or a 5xx. */
  get retryable(): boolean {
    if (this.status === 0) return this.code !== 'aborted'
    return this.status === 408 || this.status === 429 || this.status >= 500
  }
}
