import { Elysia } from 'elysia'
import { alsoAnswers, noContent } from '../../http/openapi-document.ts'
import type { AreaDeps } from '../deps.ts'
import { decodePosition, pageSize } from '../shared/paging.ts'
import { assertJsonSize, assertStorable, fieldPath, IdParams, recordPath, strictBody } from '../shared/validation.ts'
import { addMembers, assertOneIdentifier, createList, getList, listLists, listMembers, removeMembers, toListRecord } from './lists.ts'
import {
  Added,
  CompaniesBody,
  CompaniesQuery,
  CompaniesUpserted,
  Company,
  CompanyPage,
  List,
  ListPage,
  MemberPage,
  MembersBody,
  NewList,
  PAGE_LIMIT,
  PageQuery,
  PeopleBody,
  PeopleQuery,
  PeopleUpserted,
  Person,
  PersonPage,
  Removed,
  SlugParams,
} from './model.ts'
import {
  companiesByIds,
  deletePerson,
  getCompany,
  getPerson,
  listCompanies,
  listPeople,
  peopleByIds,
  toCompanyRecord,
  toPersonRecord,
} from './service.ts'
import { COMPANIES, PEOPLE, upsertRecords } from './upsert.ts'
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
export function audienceRoutes({ db, access }: AreaDeps) {
  return new Elysia({ name: 'area/audience', prefix: '/api/v0/audience', detail: { tags: ['audience'] } })
    .use(access)
    .post(
      '/people',
      async ({ body, access: { key } }) => {
        const isBatch = 'people' in body
        const records = isBatch ? body.people : [body]
        for (const [i, record] of records.entries()) assertStorableRecord(record, recordPath(isBatch ? 'people' : null, i))
        const secret = key.type === 'public' ? await identitySecretOf(db, key.businessId) : null
        const { ids } = await upsertRecords(db, PEOPLE, key.businessId, records, isBatch, mayUpdateStored(key, secret))
        // A public key's acknowledgement counts the records processed, whatever they changed.
        if (key.type === 'public') return { upserted: records.length }
        const rows = await peopleByIds(db, key.businessId, ids)
        return { upserted: ids.length, data: rows.map(toPersonRecord) }
      },
      {
        access: { scope: 'AUDIENCE_PERSON_WRITE', public: true },
        body: PeopleBody.schema,
        transform: PeopleBody.transform,
        response: PeopleUpserted,
        detail: {
          ...alsoAnswers('conflict'),
          summary: 'Create or update one person, or up to 1000 as {"people": [...]}',
          description:
            'Matched on externalId, else on email (any case). One statement per request: all records are written or none. Public keys create people who do not exist and change nothing stored (contract section 6); they get {"upserted": n}, n the records processed.',
        },
      },
    )
    .get(
      '/people',
      async ({ query, access: { key } }) => {
        const limit = pageSize(query.limit, PAGE_LIMIT.default)
        return listPeople(db, key.businessId, {
          email: query.email,
          externalId: query.externalId,
          after: decodePosition(query.cursor),
          limit,
        })
      },
      {
        access: { scope: 'AUDIENCE_PERSON_READ', public: false },
        query: PeopleQuery,
        response: PersonPage,
        detail: { summary: 'List people, newest first, in cursor pages' },
      },
    )
    .get('/people/:id', async ({ params, access: { key } }) => toPersonRecord(await getPerson(db, key.businessId, params.id)), {
      access: { scope: 'AUDIENCE_PERSON_READ', public: false },
      params: IdParams,
      response: Person,
      detail: { summary: 'Show a person' },
    })
    .delete(
      '/people/:id',
      async ({ params, access: { key }, status }) => {
        await deletePerson(db, key.businessId, params.id)
        return status(204, null)
      },
      {
        access: { scope: 'AUDIENCE_PERSON_WRITE', public: false },
        params: IdParams,
        detail: { summary: 'Delete a person and their list memberships', ...noContent('Deleted') },
      },
    )
    .post(
      '/companies',
      async ({ body, access: { key } }) => {
        const isBatch = 'companies' in body
        const records = isBatch ? body.companies : [body]
        for (const [i, record] of records.entries()) assertStorableRecord(record, recordPath(isBatch ? 'companies' : null, i))
        const { ids } = await upsertRecords(db, COMPANIES, key.businessId, records, isBatch, mayUpdateStored(key))
        if (key.type === 'public') return { upserted: records.length }
        const rows = await companiesByIds(db, key.businessId, ids)
        return { upserted: ids.length, data: rows.map(toCompanyRecord) }
      },
      {
        access: { scope: 'AUDIENCE_COMPANY_WRITE', public: true },
        body: CompaniesBody.schema,
        transform: CompaniesBody.transform,
        response: CompaniesUpserted,
        detail: {
          ...alsoAnswers('conflict'),
          summary: 'Create or update one company, or up to 1000 as {"companies": [...]}',
          description:
            'Matched on externalId, else on domain (lower-cased). One statement per request: all records are written or none. Public keys create companies that do not exist and change nothing stored; they get {"upserted": n}, n the records processed.',
        },
      },
    )
    .get(
      '/companies',
      async ({ query, access: { key } }) => {
        const limit = pageSize(query.limit, PAGE_LIMIT.default)
        return listCompanies(db, key.businessId, {
          domain: query.domain,
          externalId: query.externalId,
          after: decodePosition(query.cursor),
          limit,
        })
      },
      {
        access: { scope: 'AUDIENCE_COMPANY_READ', public: false },
        query: CompaniesQuery,
        response: CompanyPage,
        detail: { summary: 'List companies, newest first, in cursor pages' },
      },
    )
    .get('/companies/:id', async ({ params, access: { key } }) => toCompanyRecord(await getCompany(db, key.businessId, params.id)), {
      access: { scope: 'AUDIENCE_COMPANY_READ', public: false },
      params: IdParams,
      response: Company,
      detail: { summary: 'Show a company' },
    })
    .post(
      '/lists',
      async ({ body, set, access: { key } }) => {
        assertStorable(body, '')
        const list = toListRecord(await createList(db, key.businessId, body))
        set.status = 201
        return list
      },
      {
        access: { scope: 'AUDIENCE_LIST_WRITE', public: false },
        body: newList.schema,
        transform: newList.transform,
        response: { 201: List },
        detail: { summary: 'Create a list; a slug already used in the business answers 409', ...alsoAnswers('conflict') },
      },
    )
    .get(
      '/lists',
      async ({ query, access: { key } }) => {
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
    .get('/lists/:slug', async ({ params, access: { key } }) => toListRecord(await getList(db, key.businessId, params.slug)), {
      access: { scope: 'AUDIENCE_LIST_READ', public: false },
      params: SlugParams,
      response: List,
      detail: { summary: 'Show a list, with its member count', ...alsoAnswers('list_not_found') },
    })
    .get(
      '/lists/:slug/people',
      async ({ params, query, access: { key } }) => {
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
      async ({ params, body, access: { key } }) => {
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
        transform: membersBody.transform,
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
      async ({ params, body, access: { key } }) => {
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
        transform: membersBody.transform,
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
