import { Elysia, ValidationError } from 'elysia'
import { isDatabaseUnavailable } from '../../db/faults.ts'
import type { ValueError } from '@sinclair/typebox/errors'
import { ApiError, errorBody, type ErrorCode } from '../errors.ts'
import { CauseLog } from '../observability/cause-log.ts'
import { errorFields, type Logger } from '../observability/log.ts'
import { methodLabel, UNMATCHED_ROUTE } from '../observability/metrics.ts'
import { API_PREFIX, createRequestContext, type RequestContext } from './request-context.ts'
import type { MethodTable } from './routes.ts'
import { validationProblem, type ValidationProblem } from '../shared/validation-message.ts'

/** Paths the seed mentions that are not routes, with the canonical path to use instead. */
const VARIANT_PATHS: Record<string, string> = {
  '/api/v0/analytics/web': 'POST /api/v0/analytics',
  '/api/v0/people': 'POST /api/v0/audience/people',
}

/**
 * The one place where failures become HTTP answers. Every answer uses the envelope of
 * src/errors.ts; a 500 says nothing of its cause (no stack, no SQL), which goes to the
 * log under the request id instead.
 */
export function errorHandling(
  logger: Logger,
  methodsOf: MethodTable = () => [],
  options: {
    pagesPrefix?: string
    /** The pages' own answer to an address no route takes (404), or a method it does not take (405). */
    pageFailure?: (request: Request, failure: Failure) => Promise<Response>
    /** The app's request ids and Origin echo (a new one when absent: tests' own apps). */
    requestContext?: RequestContext
  } = {},
) {
  const { pagesPrefix, pageFailure } = options
  const { stampApiAnswer, stampRequestId } = options.requestContext ?? createRequestContext()
  const failureLog = new CauseLog(logger)
  return new Elysia({ name: 'error-handling' }).onError({ as: 'global' }, function renderError({ code, error, set, request, path, route }) {
    // Server-rendered pages answer a bad id or form with a page of their own (src/dashboard/failures.ts).
    if ((code === 'VALIDATION' || code === 'PARSE') && pagesPrefix !== undefined && path.startsWith(pagesPrefix)) return
    // A failure before any route hook (an unknown path, say) is not stamped yet.
    if (path.startsWith(API_PREFIX)) stampApiAnswer(set, request.headers.get('origin'))
    else stampRequestId({ set })
    const headers = set.headers as Record<string, string>
    const requestId = headers['x-request-id']!
    const failure = explainFailure(failureLog, error, { code, method: request.method, path, route, requestId }, methodsOf)
    // A browser on the dashboard gets a page it can read and leave, not the API's JSON.
    if (pageFailure && code === 'NOT_FOUND' && pagesPrefix !== undefined && path.startsWith(pagesPrefix) && !(error instanceof ApiError)) {
      return pageFailure(request, failure).then((page) => {
        page.headers.set('x-request-id', requestId)
        for (const [name, value] of Object.entries(failure.headers ?? {})) page.headers.set(name, value)
        return page
      })
    }
    set.status = failure.status
    if (failure.headers) Object.assign(headers, failure.headers)
    headers['content-type'] = 'application/json'
    return errorBody(failure.code, failure.message, requestId, failure.field)
  })
}

/** Where a failure happened, for its answer and, when it is our fault, the log. */
export interface FailureSite {
  /** Elysia's error code (NOT_FOUND, PARSE, ...), when Elysia raised it. */
  code?: string | number
  method: string
  /** The path the client sent. */
  path: string
  /** The route as declared. */
  route: string | undefined
  requestId: string
}

/**
 * The answer to a failure; a fault of ours is logged under the request id with the route
 * as declared (not the path a client wrote, which may hold anything) and the error without
 * driver messages (which may quote SQL parameters). One line a minute per cause: a flood
 * of one failure (or of clients hanging up mid-body) is one line, not one per client.
 */
export function explainFailure(log: CauseLog, error: unknown, site: FailureSite, methodsOf: MethodTable = () => []): Failure {
  const failure = describe(site.code ?? 'UNKNOWN', error, site.method, site.path, methodsOf)
  const route = site.route || UNMATCHED_ROUTE
  const method = methodLabel(site.method)
  if (failure.code === 'internal_error') {
    const why = errorFields(error)
    log.write('error', `${method} ${route} ${why.error} ${why.code} ${why.at}`, 'request failed', {
      requestId: site.requestId,
      method,
      route,
      ...why,
    })
  } else if (isClientGone(error)) {
    log.write('warn', `${method} ${route} client gone`, 'a client closed the connection before its body arrived', {
      requestId: site.requestId,
      method,
      route,
    })
  }
  return failure
}

/** The client hung up while its body was being read: Bun rejects the read with an AbortError. */
function isClientGone(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError'
}

export interface Failure {
  code: ErrorCode
  status: number
  message: string
  headers?: Record<string, string>
  /** The path of the one field at fault, on a 400 about one field. */
  field?: string
}

function describe(code: string | number, error: unknown, method: string, path: string, methodsOf: MethodTable): Failure {
  // Elysia wraps whatever a parse hook throws as a parse error: the key chain's refusals, and
  // the key lookup's database errors too, which are no fault of the body.
  if (code === 'PARSE' && error instanceof Error && error.cause !== undefined) {
    if (error.cause instanceof ApiError || isDatabaseUnavailable(error.cause)) error = error.cause
  }
  if (error instanceof ApiError) {
    return { code: error.code, status: error.status, message: error.message, headers: error.headers, field: error.field }
  }
  if (code === 'NOT_FOUND') {
    const allowed = methodsOf(path)
    // A known path asked with a method it does not take (RFC 9110 section 15.5.6).
    if (allowed.length > 0 && !allowed.includes(method)) {
      const allow = (path.startsWith(API_PREFIX) ? [...allowed, 'OPTIONS'] : allowed).join(', ')
      return {
        code: 'method_not_allowed',
        status: 405,
        message: `${path} does not take ${method}; it takes ${allow}. The routes are listed at /openapi.`,
        headers: { allow },
      }
    }
    const canonical = VARIANT_PATHS[path]
    return {
      code: 'not_found',
      status: 404,
      message: canonical
        ? `${method} ${path} is not a route; use ${canonical}.`
        : `There is no route ${method} ${path}. The routes are listed at /openapi.`,
    }
  }
  // An answer that fails its own schema is our fault: a 500, logged, never a 400.
  if (error instanceof ValidationError && error.type !== 'response') {
    return { code: 'invalid_request', status: 400, ...validationFailure(error) }
  }
  // Nobody reads this answer; it is counted as the client's, never as a fault of ours.
  if (isClientGone(error)) {
    return {
      code: 'invalid_request',
      status: 400,
      message: 'The connection closed before the whole body arrived. Send the body in full.',
    }
  }
  if (isDatabaseUnavailable(error)) {
    return {
      code: 'unavailable',
      status: 503,
      // Not "nothing was written": a statement past its deadline may still commit later.
      message: 'The database is not answering, or no primary takes writes (a failover). Retry after the delay in Retry-After.',
      headers: { 'retry-after': '5' },
    }
  }
  if (code === 'PARSE') {
    return {
      code: 'invalid_request',
      status: 400,
      message: 'The body is not valid JSON. Send a JSON document with "Content-Type: application/json".',
    }
  }
  return {
    code: 'internal_error',
    status: 500,
    message: 'Something failed on our side; nothing you sent was wrong. Quote the request id when you report it.',
  }
}

/** The schema's failures, read again from the validator; src/shared/validation-message.ts words them. */
function validationFailure(error: ValidationError): ValidationProblem {
  const validator = error.validator as { Errors?: (value: unknown) => Iterable<ValueError> } | undefined
  const all = typeof validator?.Errors === 'function' ? validator.Errors(error.value) : undefined
  // A standard-schema validator answers a promise; its first error is already at hand.
  const errors = all && Symbol.iterator in Object(all) ? all : error.valueError ? [error.valueError] : []
  return validationProblem(error.type, errors)
}
