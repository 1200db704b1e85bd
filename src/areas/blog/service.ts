import { and, asc, count, eq, gt, inArray, lte, or, sql, type SQL } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { blogAuthors, blogPostTags, blogs, blogTags } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { before, decodeCursor, decodePosition, encodeCursor, positionCursor, toPage, type Page } from '../shared/paging.ts'
import { FOREIGN_KEY_VIOLATION, invalidField, isUuid, RESTRICT_VIOLATION, sqlState, UNIQUE_VIOLATION } from '../shared/validation.ts'
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
  return new ApiError(
    'not_found',
    `There is no blog "${idOrSlug}" in this business. Check the id or slug; GET /api/v0/blog/blogs lists the blogs.`,
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

// ---- Authors -----------------------------------------------------------------------

function toAuthor(row: typeof blogAuthors.$inferSelect): AuthorRecord {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    bio: row.bio,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

function authorNotFound(idOrSlug: string): ApiError {
  return new ApiError(
    'not_found',
    `There is no author "${idOrSlug}" in this business. Check the id or slug; GET /api/v0/blog/authors lists the authors.`,
  )
}

export async function getAuthor(db: Db, businessId: string, idOrSlug: string): Promise<AuthorRecord> {
  const [row] = await db
    .select()
    .from(blogAuthors)
    .where(and(eq(blogAuthors.businessId, businessId), byIdOrSlug(blogAuthors.id, blogAuthors.slug, idOrSlug)))
  if (!row) throw authorNotFound(idOrSlug)
  return toAuthor(row)
}

/** Authors and tags are listed by slug; the cursor is the last slug of a page. */
function decodeSlugCursor(cursor: string): string {
  return decodeCursor(cursor, (value) =>
    Array.isArray(value) && value.length === 1 && typeof value[0] === 'string' && value[0].length <= 100 ? value[0] : undefined,
  )
}

export async function listAuthors(db: Db, businessId: string, page: { cursor?: string; limit: number }): Promise<Page<AuthorRecord>> {
  const after = page.cursor === undefined ? undefined : decodeSlugCursor(page.cursor)
  const rows = await db
    .select()
    .from(blogAuthors)
    .where(and(eq(blogAuthors.businessId, businessId), after === undefined ? undefined : gt(blogAuthors.slug, after)))
    .orderBy(asc(blogAuthors.slug))
    .limit(page.limit + 1)
  return toPage(rows, page.limit, (row) => encodeCursor([row.slug]), toAuthor)
}

export async function createAuthor(
  db: Db,
  businessId: string,
  input: { name: string; slug: string; bio?: string | null },
): Promise<AuthorRecord> {
  const [row] = await db
    .insert(blogAuthors)
    .values({ businessId, name: input.name, slug: input.slug, bio: input.bio ?? null })
    .onConflictDoNothing({ target: [blogAuthors.businessId, blogAuthors.slug] })
    .returning()
  if (!row) throw slugTaken('author', input.slug)
  return toAuthor(row)
}

export async function updateAuthor(
  db: Db,
  businessId: string,
  id: string,
  changes: { name?: string; slug?: string; bio?: string | null },
): Promise<AuthorRecord> {
  try {
    const [row] = await db
      .update(blogAuthors)
      .set({ name: changes.name, slug: changes.slug, bio: changes.bio, updatedAt: sql`now()` })
      .where(and(eq(blogAuthors.businessId, businessId), eq(blogAuthors.id, id)))
      .returning()
    if (!row) throw authorNotFound(id)
    return toAuthor(row)
  } catch (error) {
    if (sqlState(error) === UNIQUE_VIOLATION && changes.slug !== undefined) throw slugTaken('author', changes.slug)
    throw error
  }
}

/**
 * An author who still has posts is not deleted (409): the posts would lose their byline
 * silently. The foreign key refuses it (ON DELETE RESTRICT), so a post created meanwhile
 * cannot slip through either.
 */
export async function deleteAuthor(db: Db, businessId: string, id: string): Promise<void> {
  try {
    const rows = await db
      .delete(blogAuthors)
      .where(and(eq(blogAuthors.businessId, businessId), eq(blogAuthors.id, id)))
      .returning({ id: blogAuthors.id })
    if (rows.length === 0) throw authorNotFound(id)
  } catch (error) {
    const state = sqlState(error)
    if (state !== RESTRICT_VIOLATION && state !== FOREIGN_KEY_VIOLATION) throw error
    const [posts] = await db
      .select({ n: count() })
      .from(blogs)
      .where(and(eq(blogs.businessId, businessId), eq(blogs.authorId, id)))
    throw new ApiError(
      'conflict',
      `This author still has ${posts?.n ?? 'some'} blog(s). Give them another author (PATCH /api/v0/blog/blogs/:id with "authorId", or null) or delete them, then delete the author.`,
    )
  }
}

// ---- Tags --------------------------------------------------------------------------

function toTag(row: typeof blogTags.$inferSelect): TagRecord {
  return { id: row.id, name: row.name, slug: row.slug, createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString() }
}

function tagNotFound(idOrSlug: string): ApiError {
  return new ApiError(
    'not_found',
    `There is no tag "${idOrSlug}" in this business. Check the id or slug; GET /api/v0/blog/tags lists the tags.`,
  )
}

export async function getTag(db: Db, businessId: string, idOrSlug: string): Promise<TagRecord> {
  const [row] = await db
    .select()
    .from(blogTags)
    .where(and(eq(blogTags.businessId, businessId), byIdOrSlug(blogTags.id, blogTags.slug, idOrSlug)))
  if (!row) throw tagNotFound(idOrSlug)
  return toTag(row)
}

export async function listTags(db: Db, businessId: string, page: { cursor?: string; limit: number }): Promise<Page<TagRecord>> {
  const after = page.cursor === undefined ? undefined : decodeSlugCursor(page.cursor)
  const rows = await db
    .select()
    .from(blogTags)
    .where(and(eq(blogTags.businessId, businessId), after === undefined ? undefined : gt(blogTags.slug, after)))
    .orderBy(asc(blogTags.slug))
    .limit(page.limit + 1)
  return toPage(rows, page.limit, (row) => encodeCursor([row.slug]), toTag)
}

export async function createTag(db: Db, businessId: string, input: { name: string; slug: string }): Promise<TagRecord> {
  const [row] = await db
    .insert(blogTags)
    .values({ businessId, name: input.name, slug: input.slug })
    .onConflictDoNothing({ target: [blogTags.businessId, blogTags.slug] })
    .returning()
  if (!row) throw slugTaken('tag', input.slug)
  return toTag(row)
}

export async function updateTag(db: Db, businessId: string, id: string, changes: { name?: string; slug?: string }): Promise<TagRecord> {
  try {
    const [row] = await db
      .update(blogTags)
      .set({ name: changes.name, slug: changes.slug, updatedAt: sql`now()` })
      .where(and(eq(blogTags.businessId, businessId), eq(blogTags.id, id)))
      .returning()
    if (!row) throw tagNotFound(id)
    return toTag(row)
  } catch (error) {
    if (sqlState(error) === UNIQUE_VIOLATION && changes.slug !== undefined) throw slugTaken('tag', changes.slug)
    throw error
  }
}

/** Deleting a tag detaches it from its posts (the join rows cascade); the posts stay. */
export async function deleteTag(db: Db, businessId: string, id: string): Promise<void> {
  const rows = await db
    .delete(blogTags)
    .where(and(eq(blogTags.businessId, businessId), eq(blogTags.id, id)))
    .returning({ id: blogTags.id })
  if (rows.length === 0) throw tagNotFound(id)
}
