/**
 * The closed set of error codes, their HTTP statuses, and the one envelope every error
 * answer uses: `{"error": {"code", "message", "requestId"}}`, plus `field` (its path, such
 * as `events[3].timestamp`) on a 400 about one field.
 */
export const errorStatus = {
  missing_api_key: 401,
  malformed_api_key: 401,
  invalid_api_key: 401,
  expired_api_key: 401,
  unauthorized: 401,
  invalid_signature: 401,
  origin_not_allowed: 403,
  ip_not_allowed: 403,
  public_key_not_allowed: 403,
  insufficient_scope: 403,
  invalid_request: 400,
  not_found: 404,
  list_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const

export type ErrorCode = keyof typeof errorStatus

export interface ApiErrorOptions {
  /** Headers the answer carries (`Retry-After`, `WWW-Authenticate`). */
  headers?: Record<string, string>
  /**
   * The path of the one field at fault (`events[3].timestamp`, `personId`), for a client
   * to act on without reading the message (the backend client drops that one event).
   */
  field?: string
}

/** A refusal the caller can act on. Thrown anywhere; rendered once, in src/http/errors.ts. */
export class ApiError extends Error {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly field?: string
  constructor(
    readonly code: ErrorCode,
    message: string,
    options: ApiErrorOptions = {},
  ) {
    super(message)
    this.status = errorStatus[code]
    if (options.headers) this.headers = options.headers
    if (options.field !== undefined) this.field = options.field
  }
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; requestId: string; field?: string }
}

export function errorBody(code: ErrorCode, message: string, requestId: string, field?: string): ErrorBody {
  return { error: field === undefined ? { code, message, requestId } : { code, message, requestId, field } }
}

/**
 * The `code`s along an error's cause chain, outermost first: drivers put theirs (a
 * SQLSTATE, a socket error) on an inner cause that Drizzle wraps.
 */
export function causeCodes(error: unknown): string[] {
  const codes: string[] = []
  for (let e = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string') codes.push(code)
    e = (e as { cause?: unknown }).cause
  }
  return codes
}
