import { createHash } from 'node:crypto'
import { and, eq, sql, type SQL } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { memoryDocuments } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { before, decodeCursor, decodePosition, encodeCursor, positionCursor, toPage, type Page } from '../../shared/paging.ts'
import { isUuid } from '../../shared/validation.ts'
import type { DocumentChangesInput, DocumentRecord, NewDocumentInput } from './model.ts'

export type { DocumentRecord }

// Every column but the search vector, which is the database's business.
const columns = {
  id: memoryDocuments.id,
  title: memoryDocuments.title,
  content: memoryDocuments.content,
  metadata: memoryDocuments.metadata,
  createdAt: memoryDocuments.createdAt,
  updatedAt: memoryDocuments.updatedAt,
}

type Row = {
  id: string
  title: string | null
  content: string
  metadata: Record<string, unknown>
  createdAt: Date
  updatedAt: Date
}

function toDocument(row: Row): DocumentRecord {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    metadata: row.metadata,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `There is no memory document ${id} in this business. GET /api/v0/memory lists them.`)
}

const ofBusiness = (businessId: string, id: string) => and(eq(memoryDocuments.businessId, businessId), eq(memoryDocuments.id, id))

export async function createDocument(db: Db, businessId: string, input: NewDocumentInput): Promise<DocumentRecord> {
  const [row] = await db
    .insert(memoryDocuments)
    .values({ businessId, title: input.title ?? null, content: input.content, metadata: input.metadata ?? {} })
    .returning(columns)
  return toDocument(row!)
}

export async function getDocument(db: Db, businessId: string, id: string): Promise<DocumentRecord> {
  const [row] = await db.select(columns).from(memoryDocuments).where(ofBusiness(businessId, id))
  if (!row) throw notFound(id)
  return toDocument(row)
}

export async function updateDocument(db: Db, businessId: string, id: string, changes: DocumentChangesInput): Promise<DocumentRecord> {
  const [row] = await db
    .update(memoryDocuments)
    .set({ title: changes.title, content: changes.content, metadata: changes.metadata, updatedAt: sql`now()` })
    .where(ofBusiness(businessId, id))
    .returning(columns)
  if (!row) throw notFound(id)
  return toDocument(row)
}

export async function deleteDocument(db: Db, businessId: string, id: string): Promise<void> {
  const rows = await db.delete(memoryDocuments).where(ofBusiness(businessId, id)).returning({ id: memoryDocuments.id })
  if (rows.length === 0) throw notFound(id)
}

export interface ListOptions {
  q?: string
  cursor?: string
  limit: number
}

/** Newest first, or with `q` the matching documents by relevance. */
export function listDocuments(db: Db, businessId: string, options: ListOptions): Promise<Page<DocumentRecord>> {
  return options.q === undefined ? listNewest(db, businessId, options) : search(db, businessId, options.q, options)
}

async function listNewest(db: Db, businessId: string, options: ListOptions): Promise<Page<DocumentRecord>> {
  const after = decodePosition(options.cursor)
  const rows = await db
    .select(columns)
    .from(memoryDocuments)
    .where(and(eq(memoryDocuments.businessId, businessId), before(memoryDocuments.createdAt, memoryDocuments.id, after)))
    .orderBy(sql`${memoryDocuments.createdAt} desc nulls last`, sql`${memoryDocuments.id} desc nulls last`)
    .limit(options.limit + 1)
  return toPage(rows, options.limit, (row) => positionCursor(row.createdAt, row.id), toDocument)
}

/**
 * websearch_to_tsquery never fails on user input (unbalanced quotes, stray operators);
 * ts_rank weighs title matches (A) over content matches (B). Pages go by (rank, id): rank
 * is a float4, which survives the trip through the cursor exactly. The cursor carries a
 * digest of `q`, so a cursor from another query is refused rather than misread.
 */
async function search(db: Db, businessId: string, q: string, options: ListOptions): Promise<Page<DocumentRecord>> {
  const digest = createHash('sha256').update(q).digest('base64url').slice(0, 12)
  const after = options.cursor === undefined ? null : decodeSearchCursor(options.cursor, digest)
  const query = sql`websearch_to_tsquery('english'::regconfig, ${q})`
  const rank = sql<number>`ts_rank(${memoryDocuments.search}, ${query})`.mapWith(Number)
  const where: SQL[] = [eq(memoryDocuments.businessId, businessId), sql`${memoryDocuments.search} @@ ${query}`]
  if (after) where.push(sql`(${rank}, ${memoryDocuments.id}) < (${after.rank}::real, ${after.id}::uuid)`)
  const rows = await db
    .select({ ...columns, rank })
    .from(memoryDocuments)
    .where(and(...where))
    .orderBy(sql`${rank} desc`, sql`${memoryDocuments.id} desc`)
    .limit(options.limit + 1)
  return toPage(
    rows,
    options.limit,
    (row) => encodeCursor(['q', digest, row.rank, row.id]),
    (row) => ({ ...toDocument(row), rank: row.rank }),
  )
}

function isFloat4(value: number): boolean {
  const size = Math.abs(value)
  return value === 0 || (size >= 1.1754943508222875e-38 && size <= 3.4028234663852886e38)
}

function decodeSearchCursor(cursor: string, digest: string): { rank: number; id: string } {
  return decodeCursor(cursor, (value) => {
    if (!Array.isArray(value) || value.length !== 4) return undefined
    const [kind, seen, rank, id] = value
    // A rank outside float4's range (1e300, 1e-50) would overflow or underflow `::real` in the query: a 500.
    const valid = kind === 'q' && seen === digest && typeof rank === 'number' && isFloat4(rank) && typeof id === 'string' && isUuid(id)
    return valid ? { rank, id } : undefined
  })
}
