import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { companies, people } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { before, byCreatedAt, toPage, type Page, type Position } from '../shared/paging.ts'

export type PersonRow = typeof people.$inferSelect
export type CompanyRow = typeof companies.$inferSelect

export function toPersonRecord(row: PersonRow) {
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

export function toCompanyRecord(row: CompanyRow) {
  return {
    id: row.id,
    externalId: row.externalId,
    domain: row.domain,
    name: row.name,
    properties: row.properties,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

export interface PeopleFilter {
  email?: string
  externalId?: string
  after: Position | null
  limit: number
}

/** A page of people, newest first by (createdAt, id). */
export async function listPeople(db: Db, businessId: string, filter: PeopleFilter): Promise<Page<ReturnType<typeof toPersonRecord>>> {
  const rows = await db
    .select()
    .from(people)
    .where(
      and(
        eq(people.businessId, businessId),
        filter.email === undefined ? undefined : sql`lower(${people.email}) = lower(${filter.email})`,
        filter.externalId === undefined ? undefined : eq(people.externalId, filter.externalId),
        before(people.createdAt, people.id, filter.after),
      ),
    )
    .orderBy(desc(people.createdAt), desc(people.id))
    .limit(filter.limit + 1)
  return toPage(rows, filter.limit, byCreatedAt, toPersonRecord)
}

export async function getPerson(db: Db, businessId: string, id: string): Promise<PersonRow> {
  const [row] = await db
    .select()
    .from(people)
    .where(and(eq(people.id, id), eq(people.businessId, businessId)))
  if (!row) throw new ApiError('not_found', `No person with id ${id} in this business.`)
  return row
}

/** Deletes the person; their list memberships go with them (ON DELETE CASCADE). */
export async function deletePerson(db: Db, businessId: string, id: string): Promise<void> {
  const deleted = await db
    .delete(people)
    .where(and(eq(people.id, id), eq(people.businessId, businessId)))
    .returning({ id: people.id })
  if (deleted.length === 0) throw new ApiError('not_found', `No person with id ${id} in this business.`)
}

/** The rows with these ids, in the order of `ids` (for answers in request order). */
export async function peopleByIds(db: Db, businessId: string, ids: string[]): Promise<PersonRow[]> {
  if (ids.length === 0) return []
  const rows = await db
    .select()
    .from(people)
    .where(and(eq(people.businessId, businessId), inArray(people.id, ids)))
  return inOrder(rows, ids)
}

export interface CompaniesFilter {
  domain?: string
  externalId?: string
  after: Position | null
  limit: number
}

export async function listCompanies(
  db: Db,
  businessId: string,
  filter: CompaniesFilter,
): Promise<Page<ReturnType<typeof toCompanyRecord>>> {
  const rows = await db
    .select()
    .from(companies)
    .where(
      and(
        eq(companies.businessId, businessId),
        filter.domain === undefined ? undefined : sql`lower(${companies.domain}) = lower(${filter.domain})`,
        filter.externalId === undefined ? undefined : eq(companies.externalId, filter.externalId),
        before(companies.createdAt, companies.id, filter.after),
      ),
    )
    .orderBy(desc(companies.createdAt), desc(companies.id))
    .limit(filter.limit + 1)
  return toPage(rows, filter.limit, byCreatedAt, toCompanyRecord)
}

export async function getCompany(db: Db, businessId: string, id: string): Promise<CompanyRow> {
  const [row] = await db
    .select()
    .from(companies)
    .where(and(eq(companies.id, id), eq(companies.businessId, businessId)))
  if (!row) throw new ApiError('not_found', `No company with id ${id} in this business.`)
  return row
}

export async function companiesByIds(db: Db, businessId: string, ids: string[]): Promise<CompanyRow[]> {
  if (ids.length === 0) return []
  const rows = await db
    .select()
    .from(companies)
    .where(and(eq(companies.businessId, businessId), inArray(companies.id, ids)))
  return inOrder(rows, ids)
}

function inOrder<T extends { id: string }>(rows: T[], ids: string[]): T[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  return ids.flatMap((id) => byId.get(id) ?? [])
}
