import { sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { t } from 'elysia'
import { ApiError } from '../../errors.ts'

/**
 * Cursor pagination shared by the list endpoints of analytics and audience. Pages are
 * ordered newest first by (time, id); a cursor is the position of a page's last row,
 * base64url JSON, opaque to callers. Times are stored with millisecond precision so the
 * Date a cursor carries matches the stored value exactly.
 */
export interface Position {
  at: Date
  id: string
}

export interface Page<T> {
  data: T[]
  nextCursor: string | null
}

/**
 * `limit` as the query string carries it. A pattern rather than `t.Integer`: Elysia's
 * coercion of numeric query values reports range errors without the field's name.
 */
export function limitQuery(defaultLimit: number) {
  return t.Optional(
    t.String({
      pattern: '^(?:[1-9][0-9]{0,2}|1000)$',
      error: 'must be a whole number from 1 to 1000',
      description: `Rows per page, 1-1000 (default ${defaultLimit}).`,
    }),
  )
}

export const CursorQuery = t.Optional(
  t.String({
    maxLength: 200,
    pattern: '^[A-Za-z0-9_-]+$',
    error: 'must be the nextCursor of a previous page, unchanged',
    description: 'The `nextCursor` of the previous page; leave it out for the first page.',
  }),
)

export function pageSize(raw: string | undefined, defaultLimit: number): number {
  return raw === undefined ? defaultLimit : Number(raw)
}

export function encodeCursor(position: Position): string {
  return Buffer.from(JSON.stringify([position.at.toISOString(), position.id])).toString('base64url')
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function decodeCursor(cursor: string | undefined): Position | null {
  if (cursor === undefined) return null
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (Array.isArray(decoded) && decoded.length === 2) {
      const [at, id] = decoded
      const time = typeof at === 'string' ? new Date(at) : null
      if (time && !Number.isNaN(time.getTime()) && typeof id === 'string' && UUID.test(id)) return { at: time, id }
    }
  } catch {
    // Not base64url JSON: answered below like any other foreign cursor.
  }
  throw new ApiError(
    'invalid_request',
    'Invalid query field "cursor": it is not a cursor this API gave out. Pass the nextCursor of the previous page unchanged, or leave it out for the first page.',
  )
}

/** `(time, id) < cursor`: the keyset condition of a newest-first page (none on the first page). */
export function before(time: AnyPgColumn, id: AnyPgColumn, after: Position | null): SQL | undefined {
  if (after === null) return undefined
  return sql`(${time}, ${id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
}

/** Cuts the `limit + 1` rows a query fetched into a page and the cursor of the next one. */
export function toPage<Row, Out>(
  rows: Row[],
  limit: number,
  position: (row: Row) => Position,
  render: (row: Row) => Out,
): Page<Out> {
  const more = rows.length > limit
  const shown = more ? rows.slice(0, limit) : rows
  const last = shown[shown.length - 1]
  return {
    data: shown.map(render),
    nextCursor: more && last !== undefined ? encodeCursor(position(last)) : null,
  }
}

export function pageSchema<T extends Parameters<typeof t.Array>[0]>(item: T) {
  return t.Object({
    data: t.Array(item),
    nextCursor: t.Nullable(t.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  })
}
