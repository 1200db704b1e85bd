import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { companies, people } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { before, byCreatedAt, toPage, type Page, type Position } from '../../shared/paging.ts'
import type { CompanyRecord, PersonRecord } from './model.ts'
import type { IdentitySpec, MatchedTable } from './kind.ts'

/**
 * People and companies are one kind of record: matched on externalId, else on a second
 * key (email, domain: case-insensitively), listed newest first, read by id. One set of
 * queries serves both, handed the kind; the upsert statement is upsert.ts's.
 */
/** A kind: what the upsert statement reads (upsert.ts), and how a row is rendered. */
export interface MatchedKind<T extends MatchedTable, R extends PersonRecord | CompanyRecord> extends IdentitySpec {
  table: T
  toRecord(row: T['$inferSelect']): R
}

export type PersonRow = typeof people.$inferSelect

export function toPersonRecord(row: PersonRow): PersonRecord {
  return {
    id: row.id,
    externalId: row.externalId,
    email: row.email,
    firstName: row.firstName,
    lastName: row.lastName,
    properties: row.properties,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

export const PEOPLE: MatchedKind<typeof people, PersonRecord> = {
  table: people,
  noun: 'person',
  batchKey: 'people',
  secondKey: { field: 'email', column: people.email },
  fields: [
    { field: 'firstName', column: people.firstName },
    { field: 'lastName', column: people.lastName },
  ],
  toRecord: toPersonRecord,
}

export const COMPANIES: MatchedKind<typeof companies, CompanyRecord> = {
  table: companies,
  noun: 'company',
  batchKey: 'companies',
  secondKey: { field: 'domain', column: companies.domain },
  fields: [{ field: 'name', column: companies.name }],
  toRecord: (row) => ({
    id: row.id,
    externalId: row.externalId,
    domain: row.domain,
    name: row.name,
    properties: row.properties,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }),
}

/** A list's filters (each optional; the second key is email or domain) and its page. */
export interface MatchedFilter {
  externalId?: string
  email?: string
  domain?: string
  after: Position | null
  limit: number
}

/** A page of people or companies, newest first by (createdAt, id). */
export async function listMatched<T extends MatchedTable, R extends PersonRecord | CompanyRecord>(
  db: Db,
  kind: MatchedKind<T, R>,
  businessId: string,
  filter: MatchedFilter,
): Promise<Page<R>> {
  const table: MatchedTable = kind.table
  const second = filter[kind.secondKey.field]
  const rows = await db
    .select()
    .from(table)
    .where(
      and(
        eq(table.businessId, businessId),
        second === undefined ? undefined : sql`lower(${kind.secondKey.column}) = lower(${second})`,
        filter.externalId === undefined ? undefined : eq(table.externalId, filter.externalId),
        before(table.createdAt, table.id, filter.after),
      ),
    )
    .orderBy(desc(table.createdAt), desc(table.id))
    .limit(filter.limit + 1)
  return toPage(rows, filter.limit, byCreatedAt, kind.toRecord)
}

export async function getMatched<T extends MatchedTable, R extends PersonRecord | CompanyRecord>(
  db: Db,
  kind: MatchedKind<T, R>,
  businessId: string,
  id: string,
): Promise<R> {
  const table: MatchedTable = kind.table
  const [row] = await db
    .select()
    .from(table)
    .where(and(eq(table.id, id), eq(table.businessId, businessId)))
  if (!row) throw notFound(kind, id)
  return kind.toRecord(row)
}

/** Deletes the record; a person's list memberships go with them (ON DELETE CASCADE). */
export async function deleteMatched<T extends MatchedTable, R extends PersonRecord | CompanyRecord>(
  db: Db,
  kind: MatchedKind<T, R>,
  businessId: string,
  id: string,
): Promise<void> {
  const table: MatchedTable = kind.table
  const deleted = await db
    .delete(table)
    .where(and(eq(table.id, id), eq(table.businessId, businessId)))
    .returning({ id: table.id })
  if (deleted.length === 0) throw notFound(kind, id)
}

/** The records with these ids, in the order of `ids` (for answers in request order). */
export async function matchedByIds<T extends MatchedTable, R extends PersonRecord | CompanyRecord>(
  db: Db,
  kind: MatchedKind<T, R>,
  businessId: string,
  ids: string[],
): Promise<R[]> {
  if (ids.length === 0) return []
  const table: MatchedTable = kind.table
  const rows = await db
    .select()
    .from(table)
    .where(and(eq(table.businessId, businessId), inArray(table.id, ids)))
  const byId = new Map(rows.map((row) => [row.id, row]))
  return ids.flatMap((id) => {
    const row = byId.get(id)
    return row === undefined ? [] : [kind.toRecord(row)]
  })
}

function notFound(kind: MatchedKind<MatchedTable, PersonRecord | CompanyRecord>, id: string): ApiError {
  return new ApiError('not_found', `No ${kind.noun} with id ${id} in this business.`)
}
