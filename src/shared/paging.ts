import { and, asc, desc, getTableColumns, sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { t, type TSchema } from 'elysia'
import type { Db } from '../../db/client.ts'
import type { apiKeys, businesses, flowRuns, flows, members } from '../../db/schema/index.ts'
import { assertStorableText, invalidField, isAcceptedDate, isUuid } from './validation.ts'

/**
 * Cursor pagination of every list, the API areas' and the admin API's alike. A query
 * fetches `limit + 1` rows in a fixed order; the extra row says there is a next page, whose
 * cursor is the position of the page's last row, as base64url JSON, opaque to callers.
 * A position is one of two: (time in milliseconds, id) for the tables that store
 * milliseconds, (time in microseconds, id) for the admin lists, whose tables keep
 * PostgreSQL's default precision (docs/architecture.md, "Cursors").
 */
export interface Page<T> {
  data: T[]
  nextCursor: string | null
}

export function pageSchema<T extends TSchema>(item: T) {
  return t.Object({
    data: t.Array(item),
    nextCursor: t.Nullable(t.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  })
}

// Spelled out per ceiling: the pattern is what the API reference shows.
const LIMIT_PATTERNS = {
  100: '^(?:[1-9][0-9]?|100)$',
  1000: '^(?:[1-9][0-9]{0,2}|1000)$',
} as const

/**
 * `limit` as the query string carries it. A pattern rather than `t.Integer`: Elysia's
 * coercion of numeric query values reports range errors without the field's name. The
 * ceiling is the area's: 1000 for analytics and audience rows, 100 for blog and memory
 * records, whose content is larger.
 */
export function limitQuery(options: { default: number; max: keyof typeof LIMIT_PATTERNS }) {
  return t.Optional(
    t.String({
      pattern: LIMIT_PATTERNS[options.max],
      error: `must be a whole number from 1 to ${options.max}`,
      description: `Rows per page, 1-${options.max} (default ${options.default}).`,
      // What the reference shows: the integer a client sends, not the text it travels as.
      documentAs: { type: 'integer', minimum: 1, maximum: options.max, default: options.default },
    }),
  )
}

/** The page size a limitQuery value asks for. */
export function pageSize(raw: string | undefined, defaultLimit: number): number {
  return raw === undefined ? defaultLimit : Number(raw)
}

export const CursorQuery = t.Optional(
  t.String({
    // Room for every cursor given out (a 100-character slug makes ~140), not for payloads.
    maxLength: 300,
    pattern: '^[A-Za-z0-9_-]+$',
    error: 'must be the nextCursor of a previous page, unchanged',
    description: 'The `nextCursor` of the previous page; leave it out for the first page.',
  }),
)

export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

/**
 * The value a cursor carries, as `read` takes it from the decoded JSON; a cursor that is
 * not base64url JSON, or that `read` refuses (undefined), answers 400 naming `cursor`.
 */
export function decodeCursor<T>(cursor: string, read: (value: unknown) => T | undefined): T {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    // A string no query can take (["\u0000"] as a slug position) is no cursor of ours.
    assertStorableText(value, 'cursor')
  } catch {
    // Not base64url JSON of storable text: refused below like any other foreign cursor.
    value = undefined
  }
  const decoded = value === undefined ? undefined : read(value)
  if (decoded !== undefined) return decoded
  throw invalidField(
    'cursor',
    'it is not a cursor this API gave out for this query. Pass the nextCursor of the previous page unchanged (with the same filters), or leave it out for the first page',
    'query',
  )
}

// ---- Newest first by (time, id) -----------------------------------------------------

/**
 * The position of a row in a newest-first list. Times are stored with millisecond
 * precision where they order a list, so the Date a cursor carries matches the stored value.
 * The admin lists page by microseconds instead (below): their tables keep PostgreSQL's
 * default precision, which a Date would round (docs/architecture.md, Cursors).
 */
export interface Position {
  at: Date
  id: string
}

export function positionCursor(at: Date, id: string): string {
  return encodeCursor([at.toISOString(), id])
}

/** The position a positionCursor carries; null without a cursor (the first page). */
export function decodePosition(cursor: string | undefined): Position | null {
  if (cursor === undefined) return null
  return decodeCursor(cursor, (value) => {
    if (!Array.isArray(value) || value.length !== 2) return undefined
    const [at, id] = value
    const time = typeof at === 'string' ? new Date(at) : null
    // An instant PostgreSQL cannot compare (year 0, year 275760) is no cursor of ours either.
    if (time === null || !isAcceptedDate(time) || typeof id !== 'string' || !isUuid(id)) return undefined
    return { at: time, id }
  })
}

/** The cursor of a row in a list ordered newest first by (createdAt, id). */
export const byCreatedAt = (row: { createdAt: Date; id: string }) => positionCursor(row.createdAt, row.id)

/** `(time, id) < cursor`: the keyset condition of a newest-first page (none on the first page). */
export function before(time: AnyPgColumn | SQL, id: AnyPgColumn, after: Position | null): SQL | undefined {
  if (after === null) return undefined
  return sql`(${time}, ${id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
}

// ---- The admin lists: by (time in microseconds, id) --------------------------------

/**
 * The admin lists take `limit` and `cursor` and answer `{data, nextCursor}` as the areas
 * do, with another position: the row's creation time in microseconds and its id.
 * Businesses, keys, members and flows store microseconds, which a millisecond Date would
 * round and so skip or repeat rows. Why the two positions stay apart:
 * docs/architecture.md, "Cursors".
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

/**
 * What one list answer may weigh as JSON: 1000 records of stored
 * properties could otherwise make hundreds of megabytes. The envelope (`{"data":[...],
 * "nextCursor":...}`) gets a kilobyte of it.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024
const ENVELOPE_BYTES = 1024

/**
 * Cuts the `limit + 1` rows a query fetched into a page and the cursor of the next one.
 * A page also ends before the record that would take it past MAX_PAGE_BYTES (it always
 * holds at least one record, each of which is bounded by the field limits); the cursor
 * then points after the last record shown, so the caller just asks for the next page.
 */
export function toPage<Row, Out>(
  rows: Row[],
  limit: number,
  cursorOf: (row: Row) => string,
  render: (row: Row) => Out,
  maxBytes = MAX_PAGE_BYTES,
): Page<Out> {
  const data: Out[] = []
  let bytes = ENVELOPE_BYTES
  let shown = 0
  for (; shown < rows.length && shown < limit; shown++) {
    const record = render(rows[shown]!)
    bytes += 1 + Buffer.byteLength(JSON.stringify(record))
    if (bytes > maxBytes && shown > 0) break
    data.push(record)
  }
  const last = rows[shown - 1]
  return {
    data,
    nextCursor: rows.length > shown && last !== undefined ? cursorOf(last) : null,
  }
}
