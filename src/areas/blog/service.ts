import { and, asc, count, eq, gt, inArray, lte, or, sql, type SQL } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { blogAuthors, blogPostTags, blogs, blogTags } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { before, decodeCursor, decodePosition, encodeCursor, positionCursor, toPage, type Page } from '../../shared/paging.ts'
import { FOREIGN_KEY_VIOLATION, invalidField, isUuid, RESTRICT_VIOLATION, sqlState, UNIQUE_VIOLATION } from '../../shared/validation.ts'
import type { AuthorRecord, BlogChangesInput, BlogRecord, BlogRef, NewBlogInput, TagRecord } from './model.ts'

/** Who reads: public keys see published posts whose publication time has come. */
export type Viewer = 'public' | 'private'

// ---- Blogs -------------------------------------------------------------------------

/** Newest first: by publication time, drafts by creation time. */
const blogOrder = sql`coalesce(${blogs.publishedAt}, ${blogs.createdAt})`

const tagsOfBlog = sql<string>`coalesce((
  select json_agg(json_build_object('id', t.id, 'slug', t.slug, 'name', t.name) order by pt.position)::text
  from ${blogPostTags} pt join ${blogTags} t on t.id = pt.tag_id
  where pt.blog_id = ${blogs.id}), '[]')`

const blogSelection = {
  blog: blogs,
  authorSlug: blogAuthors.slug,
  authorName: blogAuthors.name,
  // json_agg as text, parsed here: the two drivers differ in how they hand back json.
  tags: tagsOfBlog,
}

type BlogRow = {
  blog: typeof blogs.$inferSelect
  authorSlug: string | null
  authorName: string | null
  tags: string
}

function visibleTo(viewer: Viewer): SQL | undefined {
  if (viewer === 'private') return undefined
  return and(eq(blogs.status, 'published'), lte(blogs.publishedAt, sql`now()`))
}

function byIdOrSlug(id: AnyPgColumn, slug: AnyPgColumn, value: string): SQL {
  return isUuid(value) ? eq(id, value.toLowerCase()) : eq(slug, value)
}

function toBlog(row: BlogRow): BlogRecord {
  const { blog } = row
  return {
    id: blog.id,
    slug: blog.slug,
    title: blog.title,
    excerpt: blog.excerpt,
    content: blog.content,
    status: blog.status,
    publishedAt: blog.publishedAt?.toISOString() ?? null,
    authorId: blog.authorId,
    author:
      blog.authorId !== null && row.authorSlug !== null && row.authorName !== null
        ? { id: blog.authorId, slug: row.authorSlug, name: row.authorName }
        : null,
    tags: JSON.parse(row.tags) as BlogRef[],
    createdAt: blog.createdAt.toISOString(),
    updatedAt: blog.updatedAt.toISOString(),
  }
}

function selectBlogs(db: Db) {
  return db.select(blogSelection).from(blogs).leftJoin(blogAuthors, eq(blogAuthors.id, blogs.authorId))
}

export function blogNotFound(idOrSlug: string): ApiError {
  return notFound({ noun: 'blog', path: 'blogs' }, idOrSlug)
}

/** A blog, author or tag that this business does not have. */
function notFound(kind: { noun: string; path: string }, idOrSlug: string): ApiError {
  return new ApiError(
    'not_found',
    `There is no ${kind.noun} "${idOrSlug}" in this business. Check the id or slug; GET /api/v0/blog/${kind.path} lists the ${kind.path}.`,
  )
}

export async function getBlog(db: Db, businessId: string, viewer: Viewer, idOrSlug: string): Promise<BlogRecord> {
  const [row] = await selectBlogs(db).where(
    and(eq(blogs.businessId, businessId), byIdOrSlug(blogs.id, blogs.slug, idOrSlug), visibleTo(viewer)),
  )
  if (!row) throw blogNotFound(idOrSlug)
  return toBlog(row)
}

export interface BlogFilters {
  tag?: string
  author?: string
  status?: 'draft' | 'published'
  cursor?: string
  limit: number
}

export async function listBlogs(db: Db, businessId: string, viewer: Viewer, filters: BlogFilters): Promise<Page<BlogRecord>> {
  const after = decodePosition(filters.cursor)
  const rows = await selectBlogs(db)
    .where(
      and(
        eq(blogs.businessId, businessId),
        visibleTo(viewer),
        filters.status ? eq(blogs.status, filters.status) : undefined,
        filters.author
          ? sql`${blogs.authorId} = (select a.id from ${blogAuthors} a where a.business_id = ${businessId} and a.slug = ${filters.author})`
          : undefined,
        filters.tag
          ? sql`exists (select 1 from ${blogPostTags} pt join ${blogTags} t on t.id = pt.tag_id
              where pt.blog_id = ${blogs.id} and t.business_id = ${businessId} and t.slug = ${filters.tag})`
          : undefined,
        before(blogOrder, blogs.id, after),
      ),
    )
    .orderBy(sql`${blogOrder} desc`, sql`${blogs.id} desc`)
    .limit(filters.limit + 1)
  return toPage(rows, filters.limit, ({ blog }) => positionCursor(blog.publishedAt ?? blog.createdAt, blog.id), toBlog)
}

/**
 * When a post counts as published. A date given is kept; a published post without one
 * gets the database's now (once: republishing keeps the first date); an explicit null on
 * a draft clears it.
 */
function publishedAtFor(status: 'draft' | 'published', given: string | null | undefined, current: Date | null): Date | SQL | null {
  if (typeof given === 'string') return new Date(given)
  if (status === 'published') return current ?? sql`now()`
  return given === null ? null : current
}

function slugTaken(kind: 'blog' | 'author' | 'tag', slug: string): ApiError {
  return new ApiError(
    'conflict',
    `This business already has a ${kind} with the slug "${slug}". Choose another slug, or change that ${kind} instead.`,
  )
}

/** Locks the author (FOR SHARE) so that it cannot be deleted before the post commits. */
async function lockAuthor(db: Db, businessId: string, authorId: string): Promise<void> {
  const [row] = await db
    .select({ id: blogAuthors.id })
    .from(blogAuthors)
    .where(and(eq(blogAuthors.businessId, businessId), eq(blogAuthors.id, authorId.toLowerCase())))
    .for('share')
  if (!row) {
    throw invalidField(
      'authorId',
      `there is no author with id ${authorId} in this business; create one with POST /api/v0/blog/authors, or send null`,
    )
  }
}

/** The ids of the referenced tags, in the order sent, duplicates dropped; locked like the author. */
async function lockTags(db: Db, businessId: string, refs: readonly string[]): Promise<string[]> {
  if (refs.length === 0) return []
  const ids = refs.filter((r) => isUuid(r)).map((r) => r.toLowerCase())
  const slugs = refs.filter((r) => !isUuid(r))
  const rows = await db
    .select({ id: blogTags.id, slug: blogTags.slug })
    .from(blogTags)
    .where(
      and(
        eq(blogTags.businessId, businessId),
        or(ids.length ? inArray(blogTags.id, ids) : undefined, slugs.length ? inArray(blogTags.slug, slugs) : undefined),
      ),
    )
    .for('share')
  const found = new Map<string, string>()
  for (const row of rows) {
    found.set(row.id, row.id)
    found.set(row.slug, row.id)
  }
  const result: string[] = []
  refs.forEach((ref, i) => {
    const id = found.get(isUuid(ref) ? ref.toLowerCase() : ref)
    if (id === undefined) {
      throw invalidField(`tags[${i}]`, `there is no tag "${ref}" in this business; create it with POST /api/v0/blog/tags first`)
    }
    if (!result.includes(id)) result.push(id)
  })
  return result
}

async function setTags(db: Db, businessId: string, blogId: string, tagIds: readonly string[]): Promise<void> {
  if (tagIds.length === 0) return
  await db.insert(blogPostTags).values(tagIds.map((tagId, position) => ({ businessId, blogId, tagId, position })))
}

export async function createBlog(db: Db, businessId: string, input: NewBlogInput): Promise<string> {
  return db.transaction(async (tx) => {
    if (input.authorId) await lockAuthor(tx, businessId, input.authorId)
    const tagIds = await lockTags(tx, businessId, input.tags ?? [])
    const status = input.status ?? 'draft'
    const [row] = await tx
      .insert(blogs)
      .values({
        businessId,
        slug: input.slug,
        title: input.title,
        excerpt: input.excerpt ?? '',
        content: input.content,
        authorId: input.authorId?.toLowerCase() ?? null,
        status,
        publishedAt: publishedAtFor(status, input.publishedAt, null),
      })
      .onConflictDoNothing({ target: [blogs.businessId, blogs.slug] })
      .returning({ id: blogs.id })
    if (!row) throw slugTaken('blog', input.slug)
    await setTags(tx, businessId, row.id, tagIds)
    return row.id
  })
}

export async function updateBlog(db: Db, businessId: string, id: string, changes: BlogChangesInput): Promise<void> {
  await db.transaction(async (tx) => {
    const [current] = await tx
      .select({ status: blogs.status, publishedAt: blogs.publishedAt })
      .from(blogs)
      .where(and(eq(blogs.businessId, businessId), eq(blogs.id, id)))
      .for('update')
    if (!current) throw blogNotFound(id)
    if (changes.authorId) await lockAuthor(tx, businessId, changes.authorId)
    const tagIds = changes.tags === undefined ? undefined : await lockTags(tx, businessId, changes.tags)
    const status = changes.status ?? current.status
    try {
      await tx
        .update(blogs)
        .set({
          slug: changes.slug,
          title: changes.title,
          excerpt: changes.excerpt,
          content: changes.content,
          authorId: changes.authorId === undefined ? undefined : (changes.authorId?.toLowerCase() ?? null),
          status,
          publishedAt: publishedAtFor(status, changes.publishedAt, current.publishedAt),
          updatedAt: sql`now()`,
        })
        .where(eq(blogs.id, id))
    } catch (error) {
      if (sqlState(error) === UNIQUE_VIOLATION && changes.slug !== undefined) throw slugTaken('blog', changes.slug)
      throw error
    }
    if (tagIds !== undefined) {
      await tx.delete(blogPostTags).where(eq(blogPostTags.blogId, id))
      await setTags(tx, businessId, id, tagIds)
    }
  })
}

export async function deleteBlog(db: Db, businessId: string, id: string): Promise<void> {
  const rows = await db
    .delete(blogs)
    .where(and(eq(blogs.businessId, businessId), eq(blogs.id, id)))
    .returning({ id: blogs.id })
  if (rows.length === 0) throw blogNotFound(id)
}

// ---- Authors and tags --------------------------------------------------------------

/**
 * Authors and tags are one kind of record: named, addressed by an id or a per-business
 * slug, listed by slug. One set of queries serves both, handed the kind; what differs
 * (a tag's fields, an author's refused delete) is in the kind or beside it.
 */
// The queries below widen `kind.table` to this union: Drizzle types a query over a union
// of tables, not over a generic one. The rows are still the kind's own, for its toRecord.
export type NamedTable = typeof blogAuthors | typeof blogTags

export interface NamedKind<T extends NamedTable, R extends AuthorRecord | TagRecord> {
  table: T
  /** One record, for messages: "author", "tag". */
  noun: 'author' | 'tag'
  /** Where they are listed, under /api/v0/blog: "authors", "tags". */
  path: 'authors' | 'tags'
  toRecord(row: T['$inferSelect']): R
  /** The 409 for a delete the database refused (ON DELETE RESTRICT); none where it cascades. */
  refusedDelete?(db: Db, businessId: string, id: string): Promise<ApiError>
}

export const AUTHORS: NamedKind<typeof blogAuthors, AuthorRecord> = {
  table: blogAuthors,
  noun: 'author',
  path: 'authors',
  toRecord: (row) => ({
    id: row.id,
    name: row.name,
    slug: row.slug,
    bio: row.bio,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }),
  // An author who still has posts is not deleted: the posts would lose their byline
  // silently. The foreign key refuses it, so a post created meanwhile cannot slip through.
  async refusedDelete(db, businessId, id) {
    const [posts] = await db
      .select({ n: count() })
      .from(blogs)
      .where(and(eq(blogs.businessId, businessId), eq(blogs.authorId, id)))
    return new ApiError(
      'conflict',
      `This author still has ${posts?.n ?? 'some'} blog(s). Give them another author (PATCH /api/v0/blog/blogs/:id with "authorId", or null) or delete them, then delete the author.`,
    )
  },
}

export const TAGS: NamedKind<typeof blogTags, TagRecord> = {
  table: blogTags,
  noun: 'tag',
  path: 'tags',
  toRecord: (row) => ({
    id: row.id,
    name: row.name,
    slug: row.slug,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }),
}

/** What a create may set: a tag has no bio (its schema refuses one). */
export type NamedInput = { name: string; slug: string; bio?: string | null }

export async function getNamed<T extends NamedTable, R extends AuthorRecord | TagRecord>(
  db: Db,
  kind: NamedKind<T, R>,
  businessId: string,
  idOrSlug: string,
): Promise<R> {
  const table: NamedTable = kind.table
  const [row] = await db
    .select()
    .from(table)
    .where(and(eq(table.businessId, businessId), byIdOrSlug(table.id, table.slug, idOrSlug)))
  if (!row) throw notFound(kind, idOrSlug)
  return kind.toRecord(row)
}

/** Authors and tags are listed by slug; the cursor is the last slug of a page. */
function decodeSlugCursor(cursor: string): string {
  return decodeCursor(cursor, (value) =>
    Array.isArray(value) && value.length === 1 && typeof value[0] === 'string' && value[0].length <= 100 ? value[0] : undefined,
  )
}

export async function listNamed<T extends NamedTable, R extends AuthorRecord | TagRecord>(
  db: Db,
  kind: NamedKind<T, R>,
  businessId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<R>> {
  const table: NamedTable = kind.table
  const after = page.cursor === undefined ? undefined : decodeSlugCursor(page.cursor)
  const rows = await db
    .select()
    .from(table)
    .where(and(eq(table.businessId, businessId), after === undefined ? undefined : gt(table.slug, after)))
    .orderBy(asc(table.slug))
    .limit(page.limit + 1)
  return toPage(rows, page.limit, (row) => encodeCursor([row.slug]), kind.toRecord)
}

export async function createNamed<T extends NamedTable, R extends AuthorRecord | TagRecord>(
  db: Db,
  kind: NamedKind<T, R>,
  businessId: string,
  input: NamedInput,
): Promise<R> {
  const table: NamedTable = kind.table
  const [row] = await db
    .insert(table)
    .values({ businessId, ...input })
    .onConflictDoNothing({ target: [table.businessId, table.slug] })
    .returning()
  if (!row) throw slugTaken(kind.noun, input.slug)
  return kind.toRecord(row)
}

export async function updateNamed<T extends NamedTable, R extends AuthorRecord | TagRecord>(
  db: Db,
  kind: NamedKind<T, R>,
  businessId: string,
  id: string,
  changes: Partial<NamedInput>,
): Promise<R> {
  const table: NamedTable = kind.table
  try {
    const [row] = await db
      .update(table)
      .set({ ...changes, updatedAt: sql`now()` })
      .where(and(eq(table.businessId, businessId), eq(table.id, id)))
      .returning()
    if (!row) throw notFound(kind, id)
    return kind.toRecord(row)
  } catch (error) {
    if (sqlState(error) === UNIQUE_VIOLATION && changes.slug !== undefined) throw slugTaken(kind.noun, changes.slug)
    throw error
  }
}

/** Deleting a tag detaches it from its posts (the join rows cascade); the posts stay. */
export async function deleteNamed<T extends NamedTable, R extends AuthorRecord | TagRecord>(
  db: Db,
  kind: NamedKind<T, R>,
  businessId: string,
  id: string,
): Promise<void> {
  const table: NamedTable = kind.table
  try {
    const rows = await db
      .delete(table)
      .where(and(eq(table.businessId, businessId), eq(table.id, id)))
      .returning({ id: table.id })
    if (rows.length === 0) throw notFound(kind, id)
  } catch (error) {
    const state = sqlState(error)
    if (kind.refusedDelete === undefined || (state !== RESTRICT_VIOLATION && state !== FOREIGN_KEY_VIOLATION)) throw error
    throw await kind.refusedDelete(db, businessId, id)
  }
}
