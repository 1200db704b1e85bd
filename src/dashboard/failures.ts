import { ValidationError } from 'elysia'
import { ApiError, errorBody, type ErrorBody } from '../errors.ts'
import type { Html } from './html.ts'
import { htmlPage } from './http.ts'
import { signInFirst, visitOf } from './member.ts'
import type { SignedIn } from './sessions.ts'
import { messagePage } from './views.ts'

/** What a plugin's `:id` names, for the page and the JSON answer of an id that is no such thing. */
export interface Missing {
  title: string
  page: (member: SignedIn) => Html | string
  json: string
}

/** For plugins whose routes take no id: a failure there is a form's or an address's. */
export const NO_SUCH_PAGE: Missing = { title: 'Page not found', page: () => 'There is no such page.', json: 'There is no such page.' }

/**
 * A plugin's onError for what Elysia's validation refuses on its routes (src/http/errors.ts
 * leaves the dashboard's to it): a malformed `:id` is the plugin's 404, like a well-formed
 * id of no record, and a form or query Elysia cannot read is a 400 page that changed
 * nothing. A visitor gets what the `member` macro answers visitors. The pages' scripts get
 * the API's envelope, with the request id of the answer.
 */
export function renderFailures(missing: Missing) {
  return function renderDashboardFailure({
    code,
    error,
    set,
    request,
  }: {
    code: unknown
    error: unknown
    set: AnswerSet
    request: Request
  }) {
    const unreadable = code === 'PARSE'
    if (!unreadable && (code !== 'VALIDATION' || !(error instanceof ValidationError))) return
    const visit = visitOf(set)
    const asJson = visit?.rule === 'json'
    if (visit !== undefined && visit.member === null) {
      return asJson ? envelope(set, new ApiError('unauthorized', 'Sign in to the dashboard first.')) : signInFirst(visit.rule, request)
    }
    const member = visit?.member ?? undefined
    // A form over the body limit (src/http/request-body.ts): refused unread, nothing changed.
    const refused = unreadable && error instanceof Error && error.cause instanceof ApiError ? error.cause : undefined
    if (refused) {
      if (asJson) return envelope(set, refused)
      return htmlPage(
        refused.status,
        messagePage({ title: 'Request refused', who: member, message: `Nothing was changed: ${refused.message}` }),
      )
    }
    if (unreadable) {
      const message = 'Nothing was changed: the form holds text that is not UTF-8'
      if (asJson) return envelope(set, new ApiError('invalid_request', `${message}.`))
      return htmlPage(
        400,
        messagePage({ title: 'Request refused', who: member, message: `${message}. Go back, reload the page and try again.` }),
      )
    }
    if (!(error instanceof ValidationError)) return
    if (error.type === 'params') {
      if (asJson) return envelope(set, new ApiError('not_found', missing.json))
      return htmlPage(404, messagePage({ title: missing.title, who: member, message: member ? missing.page(member) : missing.json }))
    }
    const where = error.type === 'query' ? 'address' : 'form'
    const field = (error.valueError?.path ?? '').replace(/^\//, '').slice(0, 100) || 'body'
    const message = `Nothing was changed: the ${where}'s field "${field}" is not one this page sends (sent twice, or too long)`
    if (asJson) return envelope(set, new ApiError('invalid_request', `${message}.`))
    return htmlPage(
      400,
      messagePage({ title: 'Request refused', who: member, message: `${message}. Go back, reload the page and try again.` }),
    )
  }
}

interface AnswerSet {
  headers: Record<string, unknown>
  status?: unknown
}

/** The API's error envelope (src/http/errors.ts), carrying this answer's X-Request-Id. */
function envelope(set: AnswerSet, error: ApiError): ErrorBody {
  const headers = set.headers
  set.status = error.status
  headers['content-type'] = 'application/json'
  headers['cache-control'] = 'no-store'
  return errorBody(error.code, error.message, String(headers['x-request-id']), error.field)
}
