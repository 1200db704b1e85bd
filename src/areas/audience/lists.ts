import { invalidField } from '../../shared/validation.ts'
import { and, desc, eq, getTableColumns, sql } from 'drizzle-orm'
import { queryRows, type Db } from '../../../db/client.ts'
import { audienceListMembers, audienceLists, people } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { before, byCreatedAt, positionCursor, toPage, type Page, type Position } from '../../shared/paging.ts'
import { toPersonRecord, type PersonRow } from './service.ts'

type ListRow = typeof audienceLists.$inferSelect & { memberCount: number }

export function toListRecord(row: ListRow) {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    description: row.description,
    memberCount: row.memberCount,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

const memberCount = sql<number>`(select count(*)::int from ${audienceListMembers} where ${audienceListMembers.listId} = ${audienceLists.id})`

export async function createList(
  db: Db,
  businessId: string,
  input: { slug: string; name: string; description?: string },
): Promise<ListRow> {
  const [row] = await db
    .insert(audienceLists)
    .values({ businessId, slug: input.slug, name: input.name, description: input.description ?? null })
    .onConflictDoNothing({ target: [audienceLists.businessId, audienceLists.slug] })
    .returning()
  if (!row) {
    throw new ApiError(
      'conflict',
      `A list with the slug "${input.slug}" already exists in this business. Choose another slug, or use the existing list.`,
    )
  }
  return { ...row, memberCount: 0 }
}

export async function listLists(
  db: Db,
  businessId: string,
  page: { after: Position | null; limit: number },
): Promise<Page<ReturnType<typeof toListRecord>>> {
  const rows = await db
    .select({ ...getTableColumns(audienceLists), memberCount })
    .from(audienceLists)
    .where(and(eq(audienceLists.businessId, businessId), before(audienceLists.createdAt, audienceLists.id, page.after)))
    .orderBy(desc(audienceLists.createdAt), desc(audienceLists.id))
    .limit(page.limit + 1)
  return toPage(rows, page.limit, byCreatedAt, toListRecord)
}

export async function getList(db: Db, businessId: string, slug: string): Promise<ListRow> {
  const [row] = await db
    .select({ ...getTableColumns(audienceLists), memberCount })
    .from(audienceLists)
    .where(and(eq(audienceLists.businessId, businessId), eq(audienceLists.slug, slug)))
  if (!row) throw listNotFound(slug)
  return row
}

async function listId(db: Db, businessId: string, slug: string): Promise<string> {
  const [row] = await db
    .select({ id: audienceLists.id })
    .from(audienceLists)
    .where(and(eq(audienceLists.businessId, businessId), eq(audienceLists.slug, slug)))
  if (!row) throw listNotFound(slug)
  return row.id
}

function listNotFound(slug: string): ApiError {
  return new ApiError(
    'list_not_found',
    `No list with the slug "${slug}" in this business. Create it first (POST /api/v0/audience/lists with a private key), or check the slug.`,
  )
}

export type MemberRow = PersonRow & { addedAt: Date }

export function toMemberRecord(row: MemberRow) {
  return { ...toPersonRecord(row), addedAt: row.addedAt.toISOString() }
}

/** A page of a list's members, most recently added first by (addedAt, person id). */
export async function listMembers(
  db: Db,
  businessId: string,
  slug: string,
  page: { after: Position | null; limit: number },
): Promise<Page<ReturnType<typeof toMemberRecord>>> {
  const id = await listId(db, businessId, slug)
  const m = audienceListMembers
  const rows = await db
    .select({ ...getTableColumns(people), addedAt: m.addedAt })
    .from(m)
    .innerJoin(people, eq(people.id, m.personId))
    .where(and(eq(m.listId, id), before(m.addedAt, m.personId, page.after)))
    .orderBy(desc(m.addedAt), desc(m.personId))
    .limit(page.limit + 1)
  return toPage(rows, page.limit, (row) => positionCursor(row.addedAt, row.id), toMemberRecord)
}

/** A member as the request names them: exactly one of the three is set. */
export interface MemberRef {
  email?: string
  externalId?: string
  id?: string
  identityHash?: string
}

/** 400 unless the ref names its person by exactly one of email, externalId or id. */
export function assertOneIdentifier(ref: MemberRef, path: string): void {
  const named = [ref.email, ref.externalId, ref.id].filter((value) => value !== undefined).length
  if (named !== 1) {
    throw invalidField(
      path,
      'name one person by exactly one of "email", "externalId" or "id" (plus "identityHash" where the business verifies identity)',
    )
  }
}

function refRows(refs: readonly MemberRef[]): string {
  return JSON.stringify(
    refs.map((ref, ord) => ({ ord, id: ref.id ?? null, external_id: ref.externalId ?? null, email: ref.email ?? null })),
  )
}

/** The people the refs name, as a CTE body: (ord, email, person_id), null where nobody matched. */
function resolveRefs(businessId: string, refs: readonly MemberRef[]) {
  return sql`
    select i.ord, i.email, coalesce(by_id.id, by_external_id.id, by_email.id) as person_id
    from jsonb_to_recordset(${refRows(refs)}::jsonb) as i(ord int, id uuid, external_id text, email text)
    left join people by_id on by_id.business_id = ${businessId}::uuid and by_id.id = i.id
    left join people by_external_id
      on by_external_id.business_id = ${businessId}::uuid and by_external_id.external_id = i.external_id
    left join people by_email on by_email.business_id = ${businessId}::uuid and lower(by_email.email) = lower(i.email)`
}

/**
 * Adds people to a list in one statement: people named by email are created when missing;
 * an id or externalId that names nobody refuses the whole request (404, nothing written),
 * or, not `strict` (public keys, which must not learn who exists), is skipped.
 * Answers the number of memberships created: people already on the list count 0.
 */
export async function addMembers(
  db: Db,
  businessId: string,
  slug: string,
  refs: readonly MemberRef[],
  options: { strict: boolean } = { strict: true },
): Promise<number> {
  const list = await listId(db, businessId, slug)
  // ON CONFLICT DO UPDATE (not DO NOTHING) so that an email inserted by a concurrent
  // request still yields its person's id here, and that person joins the list too.
  const [result] = await queryRows<{ added: number; missing: string }>(
    db,
    sql`
      with found as (${resolveRefs(businessId, refs)}),
      missing as (select ord from found where person_id is null and email is null and ${options.strict}),
      created as (
        insert into people (business_id, email)
        select distinct on (lower(email)) ${businessId}::uuid, email
        from found
        where person_id is null and email is not null and not exists (select 1 from missing)
        order by lower(email), ord
        on conflict (business_id, lower(email)) do update set email = people.email
        returning id
      ),
      added as (
        insert into audience_list_members (list_id, person_id)
        select distinct ${list}::uuid, person_id
        from (select person_id from found where person_id is not null union select id from created) named
        where not exists (select 1 from missing)
        on conflict do nothing
        returning person_id
      )
      select (select count(*)::int from added) as added,
             (select coalesce(json_agg(ord order by ord), '[]'::json) from missing)::text as missing`,
  )
  const missing: number[] = JSON.parse(result!.missing)
  const first = missing[0]
  if (first !== undefined) {
    const ref = refs[first]!
    const named = ref.id !== undefined ? `id ${ref.id}` : `externalId ${JSON.stringify(ref.externalId)}`
    throw new ApiError(
      'not_found',
      `Body field "people[${first}]": no person with ${named} in this business, so nothing was added. Add them by email (which creates the person), or upsert them first.`,
    )
  }
  return result!.added
}

/**
 * Removes people from a list in one statement. Removing is idempotent: a ref that names
 * nobody, or someone not on the list, removes nothing. Answers the memberships removed.
 */
export async function removeMembers(db: Db, businessId: string, slug: string, refs: readonly MemberRef[]): Promise<number> {
  const list = await listId(db, businessId, slug)
  const [result] = await queryRows<{ removed: number }>(
    db,
    sql`
      with found as (${resolveRefs(businessId, refs)}),
      removed as (
        delete from audience_list_members m
        where m.list_id = ${list}::uuid and m.person_id in (select person_id from found where person_id is not null)
        returning m.person_id
      )
      select count(*)::int as removed from removed`,
  )
  return result!.removed
}
