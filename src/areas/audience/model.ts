import type { TProperties, TSchema } from '@sinclair/typebox'
import { t } from 'elysia'
import { CursorQuery, limitQuery, pageSchema } from '../../shared/paging.ts'
import { oneOrBatch, PropertyBag, Uuid } from '../../shared/validation.ts'
import { Chars } from '../../shared/characters.ts'

export const MAX_UPSERT_BATCH = 1000
export const MAX_MEMBERS_PER_REQUEST = 1000
export const PAGE_LIMIT = { default: 100, max: 1000 } as const

// Option objects, shared by body fields and query filters (which differ in description).
const externalIdOptions = {
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000]*$',
  error: 'must be 1-200 characters (U+0000 excluded)',
}

const emailOptions = {
  format: 'email',
  maxLength: 254,
  error: 'must be an email address like "ada@example.com", at most 254 characters',
}

const domainOptions = {
  maxLength: 253,
  pattern: '^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z0-9-]{2,63}$',
  error: 'must be a domain name like "example.com", without scheme, path or port',
}

const ExternalId = Chars({
  ...externalIdOptions,
  description: 'Your own id of the record, 1-200 characters; matched exactly (case-sensitive).',
})

const Email = t.String({ ...emailOptions, description: 'At most 254 characters; matched case-insensitively, stored as sent.' })

const Domain = t.String({ ...domainOptions, description: 'At most 253 characters; stored and matched lower-cased.' })

const Name = (description: string) => Chars({ minLength: 1, maxLength: 200, description: `${description}, 1-200 characters.` })

/** A business's server signs a person's identifier for its pages. */
const IdentityHash = t.String({
  pattern: '^[0-9a-f]{64}$',
  error:
    'must be the lower-case hex HMAC-SHA256 (64 characters) of the externalId, or else of the lower-cased email, under the business identity secret',
  description:
    "HMAC-SHA256 (lower-case hex) of this person's externalId, or without one their lower-cased email, under the business's identity secret, computed by the business's server. Lets a public key update the stored person.",
})

/**
 * People and companies are upserted alike (upsert.ts): a record is matched on its
 * externalId, else on a second key (email, domain), and what it leaves out is kept.
 */
function matchedInput<P extends TProperties>(fields: P, secondKey: 'email' | 'domain') {
  return t.Object(fields, {
    description: `Matched on externalId, else on ${secondKey}; at least one of the two. Fields left out keep their stored value; properties are merged into the stored ones.`,
  })
}

const batchOf = <T extends TSchema>(input: T) => t.Array(input, { minItems: 1, maxItems: MAX_UPSERT_BATCH })

/** The answer to an upsert: public keys get the count only; private keys also get the records written. */
function upsertedSchema<T extends TSchema>(record: T, names: { noun: string; batchKey: string }) {
  const plural = names.batchKey[0]!.toUpperCase() + names.batchKey.slice(1)
  return t.Object({
    upserted: t.Integer({ description: `${plural} created or updated (rows naming the same ${names.noun} count once).` }),
    data: t.Optional(t.Array(record, { description: `Private keys only: the ${names.batchKey} written, in request order.` })),
  })
}

/** The filters and paging both lists share; each adds its second key. */
const matchedQuery = (noun: string) => ({
  externalId: t.Optional(Chars({ ...externalIdOptions, description: `Only the ${noun} with this externalId.` })),
  limit: limitQuery(PAGE_LIMIT),
  cursor: CursorQuery,
})

export const PersonInput = matchedInput(
  {
    email: t.Optional(Email),
    externalId: t.Optional(ExternalId),
    identityHash: t.Optional(IdentityHash),
    firstName: t.Optional(Name('First name')),
    lastName: t.Optional(Name('Last name')),
    properties: t.Optional(PropertyBag),
  },
  'email',
)

export const PeopleBody = oneOrBatch(PersonInput, t.Object({ people: batchOf(PersonInput) }), 'people')

export const CompanyInput = matchedInput(
  {
    externalId: t.Optional(ExternalId),
    domain: t.Optional(Domain),
    name: t.Optional(Name('Company name')),
    properties: t.Optional(PropertyBag),
  },
  'domain',
)

export const CompaniesBody = oneOrBatch(CompanyInput, t.Object({ companies: batchOf(CompanyInput) }), 'companies')

export const Person = t.Object({
  id: t.String(),
  externalId: t.Nullable(t.String()),
  email: t.Nullable(t.String()),
  firstName: t.Nullable(t.String()),
  lastName: t.Nullable(t.String()),
  properties: t.Record(t.String(), t.Unknown()),
  createdAt: t.String(),
  updatedAt: t.String(),
})

export const Company = t.Object({
  id: t.String(),
  externalId: t.Nullable(t.String()),
  domain: t.Nullable(t.String()),
  name: t.Nullable(t.String()),
  properties: t.Record(t.String(), t.Unknown()),
  createdAt: t.String(),
  updatedAt: t.String(),
})

export type PersonRecord = typeof Person.static
export type CompanyRecord = typeof Company.static

export const PeopleUpserted = upsertedSchema(Person, { noun: 'person', batchKey: 'people' })
export const CompaniesUpserted = upsertedSchema(Company, { noun: 'company', batchKey: 'companies' })

export const PersonPage = pageSchema(Person)
export const CompanyPage = pageSchema(Company)

/** Either answer, for the routes people and companies share (src/areas/audience/index.ts). */
export type MatchedUpserted = ReturnType<typeof upsertedSchema<typeof Person | typeof Company>>
export type MatchedPage = ReturnType<typeof pageSchema<typeof Person | typeof Company>>

export const PeopleQuery = t.Object({
  email: t.Optional(t.String({ ...emailOptions, description: 'Only the person with this email (any case).' })),
  ...matchedQuery('person'),
})

export const CompaniesQuery = t.Object({
  domain: t.Optional(t.String({ ...domainOptions, description: 'Only the company with this domain (any case).' })),
  ...matchedQuery('company'),
})

export const PageQuery = t.Object({ limit: limitQuery(PAGE_LIMIT), cursor: CursorQuery })

const Slug = t.String({
  pattern: '^[a-z0-9-]{1,64}$',
  error: 'must be 1-64 characters of lower-case letters, digits and "-", like "newsletter"',
})

export const SlugParams = t.Object({ slug: Slug })

export const NewList = t.Object({
  slug: Slug,
  name: Name('Shown in the dashboard'),
  description: t.Optional(Chars({ maxLength: 1000, description: 'At most 1000 characters.' })),
})

export const List = t.Object({
  id: t.String(),
  slug: t.String(),
  name: t.String(),
  description: t.Nullable(t.String()),
  memberCount: t.Integer(),
  createdAt: t.String(),
  updatedAt: t.String(),
})

export const ListPage = pageSchema(List)

export const Member = t.Composite([Person, t.Object({ addedAt: t.String() })])
export const MemberPage = pageSchema(Member)

/**
 * One person named by exactly one of email, externalId or id (checked by
 * assertOneIdentifier: a schema cannot say "one of three, plus an optional fourth"
 * without a union, whose errors name no field), with an identityHash where a public key
 * updates a stored person (docs/api.md, "Writes with a public key").
 */
export const MemberRef = t.Object(
  {
    email: t.Optional(Email),
    externalId: t.Optional(ExternalId),
    id: t.Optional(Uuid),
    identityHash: t.Optional(IdentityHash),
  },
  {
    minProperties: 1,
    maxProperties: 2,
    error: 'must name one person as {"email": ...}, {"externalId": ...} or {"id": ...}, with an optional "identityHash"',
  },
)

export const MembersBody = t.Object({
  people: t.Array(MemberRef, { minItems: 1, maxItems: MAX_MEMBERS_PER_REQUEST }),
})

export const Added = t.Object({
  added: t.Integer({ description: 'Memberships created; people already on the list are not counted.' }),
})

export const Removed = t.Object({
  removed: t.Integer({ description: 'Memberships removed; people not on the list are not counted.' }),
})
