import { Elysia } from 'elysia'
import { alsoAnswers, noContent } from '../../http/openapi-document.ts'
import type { Scope } from '../../access/scopes.ts'
import type { AreaDeps } from '../deps.ts'
import { decodePosition, pageSize } from '../../shared/paging.ts'
import { assertJsonSize, assertStorable, fieldPath, IdParams, recordPath, strictBody } from '../../shared/validation.ts'
import { addMembers, assertOneIdentifier, createList, getList, listLists, listMembers, removeMembers, toListRecord } from './lists.ts'
import {
  Added,
  CompaniesBody,
  CompaniesQuery,
  Company,
  CompaniesUpserted,
  CompanyPage,
  type CompanyRecord,
  type MatchedPage,
  type MatchedUpserted,
  List,
  ListPage,
  MemberPage,
  MembersBody,
  NewList,
  MAX_UPSERT_BATCH,
  PAGE_LIMIT,
  PageQuery,
  PeopleBody,
  PeopleQuery,
  Person,
  PeopleUpserted,
  PersonPage,
  type PersonRecord,
  Removed,
  SlugParams,
} from './model.ts'
import type { MatchedTable } from './kind.ts'
import { COMPANIES, deleteMatched, getMatched, listMatched, type MatchedKind, matchedByIds, PEOPLE } from './service.ts'
import { upsertRecords } from './upsert.ts'
import { mayRemoveMember, mayUpdateStored } from './write-rights.ts'
import { identitySecretOf } from '../../identity/secret.ts'

/** What the schema cannot say about a person or company: storable strings, properties within 16 KiB. */
function assertStorableRecord(record: { properties?: Record<string, unknown> }, path: string): void {
  assertStorable(record, path)
  if (record.properties !== undefined) assertJsonSize(record.properties, fieldPath(path, 'properties'))
}

/**
 * People, companies and lists. Every query is scoped to the calling key's business;
 * another business's ids and slugs answer 404. Public keys may only write, and their
 * answers are counts: a public key is public, so it must never read people back.
 */

const newList = strictBody(NewList)
const membersBody = strictBody(MembersBody)
export function audienceRoutes(deps: AreaDeps) {
  const { db, keyChain } = deps
  return new Elysia({ name: 'area/audience', prefix: '/api/v0/audience', detail: { tags: ['audience'] } })
    .use(keyChain)
    .use(
      matchedRoutes(deps, {
        kind: PEOPLE,
        scopes: { read: 'AUDIENCE_PERSON_READ', write: 'AUDIENCE_PERSON_WRITE' },
        body: PeopleBody,
        query: PeopleQuery,
        upserted: PeopleUpserted,
        record: Person,
        page: PersonPage,
        upsertDescription:
          'Matched on externalId, else on email (any case). One statement per request: all records are written or none. Public keys create people who do not exist and change nothing stored; they get {"upserted": n}, n the records processed.',
      }),
    )
    .delete(
      '/people/:id',
      async ({ params, set, grant: { key } }) => {
        await deleteMatched(db, PEOPLE, key.businessId, params.id)
        set.status = 204
        return null
      },
      {
        access: { scope: 'AUDIENCE_PERSON_WRITE', public: false },
        params: IdParams,
        detail: { summary: 'Delete a person and their list memberships', ...noContent('Deleted') },
      },
    )
    .use(
      matchedRoutes(deps, {
        kind: COMPANIES,
        scopes: { read: 'AUDIENCE_COMPANY_READ', write: 'AUDIENCE_COMPANY_WRITE' },
        body: CompaniesBody,
        query: CompaniesQuery,
        upserted: CompaniesUpserted,
        record: Company,
        page: CompanyPage,
        upsertDescription:
          'Matched on externalId, else on domain (lower-cased). One statement per request: all records are written or none. Public keys create companies that do not exist and change nothing stored; they get {"upserted": n}, n the records processed.',
      }),
    )
    .post(
      '/lists',
      async ({ body, set, grant: { key } }) => {
        assertStorable(body, '')
        const list = toListRecord(await createList(db, key.businessId, body))
        set.status = 201
        return list
      },
      {
        access: { scope: 'AUDIENCE_LIST_WRITE', public: false },
        body: newList.schema,
        transform: newList.check,
        response: { 201: List },
        detail: { summary: 'Create a list; a slug already used in the business answers 409', ...alsoAnswers('conflict') },
      },
    )
    .get(
      '/lists',
      async ({ query, grant: { key } }) => {
        const limit = pageSize(query.limit, PAGE_LIMIT.default)
        return listLists(db, key.businessId, { after: decodePosition(query.cursor), limit })
      },
      {
        access: { scope: 'AUDIENCE_LIST_READ', public: false },
        query: PageQuery,
        response: ListPage,
        detail: { summary: 'List lists, newest first, in cursor pages' },
      },
    )
    .get('/lists/:slug', async ({ params, grant: { key } }) => toListRecord(await getList(db, key.businessId, params.slug)), {
      access: { scope: 'AUDIENCE_LIST_READ', public: false },
      params: SlugParams,
      response: List,
      detail: { summary: 'Show a list, with its member count', ...alsoAnswers('list_not_found') },
    })
    .get(
      '/lists/:slug/people',
      async ({ params, query, grant: { key } }) => {
        const limit = pageSize(query.limit, PAGE_LIMIT.default)
        return listMembers(db, key.businessId, params.slug, { after: decodePosition(query.cursor), limit })
      },
      {
        access: { scope: 'AUDIENCE_LIST_READ', public: false },
        params: SlugParams,
        query: PageQuery,
        response: MemberPage,
        detail: { summary: "A list's members, most recently added first, in cursor pages", ...alsoAnswers('list_not_found') },
      },
    )
    .post(
      '/lists/:slug/people',
      async ({ params, body, grant: { key } }) => {
        body.people.forEach((ref, i) => {
          assertStorable(ref, recordPath('people', i))
          assertOneIdentifier(ref, recordPath('people', i))
        })
        // Public keys: a ref naming nobody is skipped rather than refused, and the answer counts
        // the refs processed, so it says nothing of who exists or who was on the list.
        const added = await addMembers(db, key.businessId, params.slug, body.people, { strict: key.type === 'private' })
        return { added: key.type === 'public' ? body.people.length : added }
      },
      {
        access: { scope: 'AUDIENCE_LIST_WRITE', public: true },
        params: SlugParams,
        body: membersBody.schema,
        transform: membersBody.check,
        response: Added,
        detail: {
          ...alsoAnswers('list_not_found'),
          summary: 'Add people to a list by email, externalId or id',
          description:
            'Adding by email creates the person when missing. Private keys: an id or externalId that names nobody answers 404 and adds nothing, and `added` counts new memberships. Public keys: such a ref is skipped, and `added` counts the refs processed, so the answer reveals nothing about who exists.',
        },
      },
    )
    .delete(
      '/lists/:slug/people',
      async ({ params, body, grant: { key } }) => {
        body.people.forEach((ref, i) => {
          assertStorable(ref, recordPath('people', i))
          assertOneIdentifier(ref, recordPath('people', i))
        })
        const secret = key.type === 'public' ? await identitySecretOf(db, key.businessId) : null
        // Refs a public key may not remove are dropped, and the answer is the same either way.
        const allowed = body.people.filter((ref) => mayRemoveMember(key, secret, ref))
        const removed = allowed.length > 0 ? await removeMembers(db, key.businessId, params.slug, allowed) : 0
        return { removed: key.type === 'public' ? body.people.length : removed }
      },
      {
        access: { scope: 'AUDIENCE_LIST_WRITE', public: true },
        params: SlugParams,
        body: membersBody.schema,
        transform: membersBody.check,
        response: Removed,
        detail: {
          ...alsoAnswers('list_not_found'),
          summary: 'Remove people from a list by email, externalId or id',
          description:
            'Idempotent: people not on the list, or named by nobody, remove nothing. `removed` counts memberships removed for private keys, and the refs processed for public keys.',
        },
      },
    )
}

/** What the routes of people or companies take: the kind, its scopes and schemas. */
interface MatchedResource<T extends MatchedTable, R extends PersonRecord | CompanyRecord> {
  kind: MatchedKind<T, R>
  scopes: { read: Scope; write: Scope }
  body: typeof PeopleBody | typeof CompaniesBody
  query: typeof PeopleQuery | typeof CompaniesQuery
  upserted: MatchedUpserted
  record: typeof Person | typeof Company
  page: MatchedPage
  upsertDescription: string
}

/** The records of an upsert body (one record, or a batch under its key) and whether it was a batch. */
function recordsOf(body: typeof PeopleBody.schema.static | typeof CompaniesBody.schema.static) {
  if ('people' in body) return { records: body.people, isBatch: true }
  if ('companies' in body) return { records: body.companies, isBatch: true }
  return { records: [body], isBatch: false }
}

/**
 * The routes people and companies share: upsert one or a batch, list, show. Mounted
 * inside audienceRoutes, which gives the /api/v0/audience prefix.
 */
function matchedRoutes<T extends MatchedTable, R extends PersonRecord | CompanyRecord>(
  { db, keyChain }: AreaDeps,
  resource: MatchedResource<T, R>,
) {
  const { kind, scopes } = resource
  return new Elysia({ name: `area/audience/${kind.batchKey}`, detail: { tags: ['audience'] } })
    .use(keyChain)
    .post(
      `/${kind.batchKey}`,
      async ({ body, grant: { key } }) => {
        const { records, isBatch } = recordsOf(body)
        for (const [i, record] of records.entries()) assertStorableRecord(record, recordPath(isBatch ? kind.batchKey : null, i))
        // Only people carry a verified identity; a company has none.
        const secret = key.type === 'public' && kind.noun === 'person' ? await identitySecretOf(db, key.businessId) : null
        const { ids } = await upsertRecords(db, kind, key.businessId, records, isBatch, mayUpdateStored(key, secret))
        // A public key's acknowledgement counts the records processed, whatever they changed.
        if (key.type === 'public') return { upserted: records.length }
        return { upserted: ids.length, data: await matchedByIds(db, kind, key.businessId, ids) }
      },
      {
        access: { scope: scopes.write, public: true },
        body: resource.body.schema,
        transform: resource.body.check,
        response: resource.upserted,
        detail: {
          ...alsoAnswers('conflict'),
          summary: `Create or update one ${kind.noun}, or up to ${MAX_UPSERT_BATCH} as {"${kind.batchKey}": [...]}`,
          description: resource.upsertDescription,
        },
      },
    )
    .get(
      `/${kind.batchKey}`,
      async ({ query, grant: { key } }) => {
        const { limit, cursor, ...filters } = query
        return listMatched(db, kind, key.businessId, {
          ...filters,
          after: decodePosition(cursor),
          limit: pageSize(limit, PAGE_LIMIT.default),
        })
      },
      {
        access: { scope: scopes.read, public: false },
        query: resource.query,
        response: resource.page,
        detail: { summary: `List ${kind.batchKey}, newest first, in cursor pages` },
      },
    )
    .get(`/${kind.batchKey}/:id`, ({ params, grant: { key } }) => getMatched(db, kind, key.businessId, params.id), {
      access: { scope: scopes.read, public: false },
      params: IdParams,
      response: resource.record,
      detail: { summary: `Show a ${kind.noun}` },
    })
}
