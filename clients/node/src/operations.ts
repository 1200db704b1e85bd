import type { paths } from './api.ts'
import { routes } from './api.ts'

/** An operation's key in the generated table: `GET /api/v0/whoami`. */
export type Route = keyof typeof routes

/**
 * The client's method for each /api/v0 operation. The method's parameters, body and answer
 * are the operation's own types in `api.ts`, generated from the service's OpenAPI document;
 * `test/client/api-drift.test.ts` fails when an operation has no method here or a method
 * names no operation, and the type below fails compilation the same way.
 */
export const operations = {
  /** The calling key's business, type, the Origin seen and its allowed origins. */
  whoami: 'GET /api/v0/whoami',
  /** Sends one event or `{events: [...]}` (at most 500) now, once. `track()` queues, batches and retries instead. */
  sendEvents: 'POST /api/v0/analytics',
  /** Events, newest first, by type and time, in cursor pages (`nextCursor`). */
  listEvents: 'GET /api/v0/analytics',
  /** Erases a person's events by `personId` and/or `anonymousId`: reads hide them at once, storage loses them in the background. */
  eraseEvents: 'POST /api/v0/analytics/erasures',
  /** An erasure request: `pending` or `done`, and the events `deleted`. */
  getErasure: 'GET /api/v0/analytics/erasures/{id}',
  /** Creates or updates one person, or up to 1000 as `{people: [...]}`. */
  upsertPeople: 'POST /api/v0/audience/people',
  listPeople: 'GET /api/v0/audience/people',
  getPerson: 'GET /api/v0/audience/people/{id}',
  deletePerson: 'DELETE /api/v0/audience/people/{id}',
  /** Creates or updates one company, or up to 1000 as `{companies: [...]}`. */
  upsertCompanies: 'POST /api/v0/audience/companies',
  listCompanies: 'GET /api/v0/audience/companies',
  getCompany: 'GET /api/v0/audience/companies/{id}',
  createList: 'POST /api/v0/audience/lists',
  listLists: 'GET /api/v0/audience/lists',
  getList: 'GET /api/v0/audience/lists/{slug}',
  listListPeople: 'GET /api/v0/audience/lists/{slug}/people',
  /** Adds people to a list by email, externalId or id (adding by email creates the person). */
  addToList: 'POST /api/v0/audience/lists/{slug}/people',
  removeFromList: 'DELETE /api/v0/audience/lists/{slug}/people',
  listBlogs: 'GET /api/v0/blog/blogs',
  createBlog: 'POST /api/v0/blog/blogs',
  getBlog: 'GET /api/v0/blog/blogs/{id}',
  updateBlog: 'PATCH /api/v0/blog/blogs/{id}',
  deleteBlog: 'DELETE /api/v0/blog/blogs/{id}',
  listAuthors: 'GET /api/v0/blog/authors',
  createAuthor: 'POST /api/v0/blog/authors',
  getAuthor: 'GET /api/v0/blog/authors/{id}',
  updateAuthor: 'PATCH /api/v0/blog/authors/{id}',
  deleteAuthor: 'DELETE /api/v0/blog/authors/{id}',
  listTags: 'GET /api/v0/blog/tags',
  createTag: 'POST /api/v0/blog/tags',
  getTag: 'GET /api/v0/blog/tags/{id}',
  updateTag: 'PATCH /api/v0/blog/tags/{id}',
  deleteTag: 'DELETE /api/v0/blog/tags/{id}',
  /** Starts a run; `idempotencyKey` makes a retry answer the first run instead of starting another. */
  triggerFlow: 'POST /api/v0/flow/{id}/trigger',
  getFlowRun: 'GET /api/v0/flow/{id}/runs/{runId}',
  createMemory: 'POST /api/v0/memory',
  /** Documents in cursor pages; `q` searches their text. */
  listMemory: 'GET /api/v0/memory',
  getMemory: 'GET /api/v0/memory/{id}',
  updateMemory: 'PATCH /api/v0/memory/{id}',
  deleteMemory: 'DELETE /api/v0/memory/{id}',
} as const satisfies Record<string, Route>

export type MethodName = keyof typeof operations

// Compilation fails here, naming the operation, when the generated table has one without a method.
type Unnamed = Exclude<Route, (typeof operations)[MethodName]>
const everyOperationNamed: [Unnamed] extends [never] ? true : { missingMethodFor: Unnamed } = true
void everyOperationNamed

type Split<R> = R extends `${infer M} ${infer P}` ? [Lowercase<M>, P] : never
/** The generated OpenAPI operation (parameters, request body, responses) behind a route. */
export type Operation<R extends Route> =
  Split<R> extends [infer M, infer P]
    ? P extends keyof paths
      ? M extends keyof paths[P]
        ? NonNullable<paths[P][M]>
        : never
      : never
    : never

/** `idempotency-key` → `idempotencyKey`: header parameters are passed beside the others. */
export type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S

export function camelCase(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())
}

type Empty = Record<never, never>
type Defined<T> = [NonNullable<T>] extends [never] ? Empty : NonNullable<T>
type Simplify<T> = { [K in keyof T]: T[K] } & {}
type ParameterPlaces<R extends Route> = Operation<R> extends { parameters: infer P } ? P : never
type Place<R extends Route, K extends string> = Defined<ParameterPlaces<R> extends { [k in K]?: infer X } ? X : never>
type Headers<H> = { [K in keyof H as CamelCase<K & string>]: H[K] }

/** Path, query and header parameters of an operation, in one object. */
export type Params<R extends Route> = Simplify<Place<R, 'path'> & Place<R, 'query'> & Headers<Place<R, 'header'>>>

/** The JSON body of an operation; never when it takes none. */
export type Body<R extends Route> = JsonOf<Operation<R>['requestBody']>
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never

type SuccessStatus = 200 | 201 | 202 | 204
type Responses<R extends Route> = Operation<R>['responses']
/** What a success answers: the 2xx JSON body; undefined for 204. */
export type Data<R extends Route> = {
  [S in keyof Responses<R> & SuccessStatus]: Responses<R>[S] extends { content: { 'application/json': infer T } } ? T : undefined
}[keyof Responses<R> & SuccessStatus]

/** Per call: a signal to cancel it, and headers to add. */
export interface CallOptions {
  signal?: AbortSignal
  headers?: Record<string, string>
}

type HasParams<R extends Route> = [keyof Params<R>] extends [never] ? false : true
type HasBody<R extends Route> = [Body<R>] extends [never] ? false : true

/** A method's arguments: `(params, body, options?)`, leaving out what the operation does not take. */
export type Args<R extends Route> =
  HasBody<R> extends true
    ? HasParams<R> extends true
      ? [params: Params<R>, body: Body<R>, options?: CallOptions]
      : [body: Body<R>, options?: CallOptions]
    : HasParams<R> extends true
      ? Empty extends Params<R>
        ? [params?: Params<R>, options?: CallOptions]
        : [params: Params<R>, options?: CallOptions]
      : [options?: CallOptions]

export { routes }
