import { and, asc, desc, getTableColumns, sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { t } from 'elysia'
import type { Db } from '../../db/client.ts'
import type { apiKeys, businesses, flowRuns, flows, members } from '../../db/schema/index.ts'
import { CursorQuery, decodeCursor, encodeCursor, limitQuery, pageSize, toPage, type Page } from '../shared/paging.ts'
import { isUuid } from '../shared/uuid.ts'

/**
 * Cursor paging of the admin lists, the /api/v0 way (src/areas/shared/paging.ts): `limit`
 * and `cursor` in the query, `{data, nextCursor}` in the answer. The position is the
 * row's creation time in microseconds and its id: businesses, keys, members and flows
 * store microseconds, which a millisecond Date would round and so skip or repeat rows. Why
 * the two positions stay apart: docs/architecture.md, "Cursors".
 */

export const ADMIN_PAGE = { default: 100, max: 1000 } as const

export const AdminPageQuery = t.Object({ limit: limitQuery(ADMIN_PAGE), cursor: CursorQuery })

export interface AdminPage {
  limit: number
  after: { micros: string; id: string } | null
  /** Newest first (most lists) or oldest first (members, in the order they joined). */
  order: 'newest' | 'oldest'
}

export function adminPage(query: { limit?: string; cursor?: string }, order: AdminPage['order'] = 'newest'): AdminPage {
  const after =
    query.cursor === undefined
      ? null
      : decodeCursor(query.cursor, (value) => {
          if (!Array.isArray(value) || value.length !== 2) return undefined
          const [micros, id] = value
          // Up to 16 digits: year 2286 in microseconds since 1970, far past anything stored.
          if (typeof micros !== 'string' || !/^\d{1,16}$/.test(micros) || typeof id !== 'string' || !isUuid(id)) {
            return undefined
          }
          return { micros, id }
        })
  return { limit: pageSize(query.limit, ADMIN_PAGE.default), after, order }
}

/** The creation time to the microsecond, as text (a bigint would lose digits in JSON). */
function microsOf(time: AnyPgColumn): SQL<string> {
  return sql<string>`(extract(epoch from ${time}) * 1000000)::bigint::text`
}

/** The keyset condition of the page after the cursor (none on the first page). */
function afterCursor(time: AnyPgColumn, id: AnyPgColumn, page: AdminPage): SQL | undefined {
  if (page.after === null) return undefined
  const at = sql`(timestamptz 'epoch' + ${page.after.micros}::bigint * interval '1 microsecond')`
  return page.order === 'newest'
    ? sql`(${time}, ${id}) < (${at}, ${page.after.id}::uuid)`
    : sql`(${time}, ${id}) > (${at}, ${page.after.id}::uuid)`
}

function orderOf(time: AnyPgColumn, id: AnyPgColumn, page: AdminPage): SQL[] {
  return page.order === 'newest' ? [desc(time), desc(id)] : [asc(time), asc(id)]
}

/** The tables the admin API lists: each has an id and a creation time in microseconds. */
type AdminListed = typeof businesses | typeof apiKeys | typeof members | typeof flows | typeof flowRuns

/**
 * One page of an admin list: the rows of `table` that `where` keeps (the business or flow
 * they belong to), in the page's order by (createdAt, id), after its cursor.
 */
export async function listAdminPage<T extends AdminListed, Out>(
  db: Db,
  table: T,
  where: SQL | undefined,
  page: AdminPage,
  render: (row: T['$inferSelect']) => Out,
): Promise<Page<Out>> {
  const listed: AdminListed = table
  const rows = await db
    .select({ ...getTableColumns(listed), micros: microsOf(listed.createdAt) })
    .from(listed)
    .where(and(where, afterCursor(listed.createdAt, listed.id, page)))
    .orderBy(...orderOf(listed.createdAt, listed.id, page))
    .limit(page.limit + 1)
  return toPage(rows, page.limit, (row) => encodeCursor([row.micros, row.id]), render)
}
