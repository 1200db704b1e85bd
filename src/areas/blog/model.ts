import type { TProperties } from '@sinclair/typebox'
import { t } from 'elysia'
import { CursorQuery, limitQuery, pageSchema } from '../../shared/paging.ts'
import { describe, Text, Uuid } from '../../shared/validation.ts'

export const BLOG_PAGE_DEFAULT = 20
const PAGE_LIMIT = { default: BLOG_PAGE_DEFAULT, max: 100 } as const
export const MAX_TAGS_PER_BLOG = 20

/**
 * A slug: lower-case words joined by single hyphens. A slug shaped like a UUID is refused,
 * so that `/blog/blogs/:id` can take either an id or a slug without ambiguity.
 */
export const Slug = t.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^(?![0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)[a-z0-9]+(?:-[a-z0-9]+)*$',
  error:
    'must be 1-100 characters of lower-case letters and digits in words joined by single hyphens, like "hello-world" (not shaped like a UUID)',
})

/** A path or body reference by id or slug. */
export const IdOrSlug = t.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9-]+$',
  error: 'must be an id (UUID) or a slug like "hello-world"',
})

export const IdOrSlugParams = t.Object({ id: IdOrSlug })

const Status = t.Union([t.Literal('draft'), t.Literal('published')], { error: 'must be "draft" or "published"' })
const DateTime = t.String({ format: 'date-time', error: 'must be an ISO-8601 date-time like "2025-01-31T09:00:00Z"' })

const blogFields = {
  slug: Slug,
  title: Text({ minLength: 1, maxLength: 200 }),
  excerpt: t.Optional(Text({ maxLength: 1000, description: 'A short summary for lists; "" when left out.' })),
  content: Text({ maxLength: 100_000, description: 'The post body, as you render it (Markdown, HTML...).' }),
  authorId: t.Optional(t.Nullable(describe(Uuid, 'An author of this business, or null.'))),
  tags: t.Optional(
    t.Array(IdOrSlug, {
      maxItems: MAX_TAGS_PER_BLOG,
      error: `must be a list of at most ${MAX_TAGS_PER_BLOG} tag ids or slugs`,
      description: 'Tags of this business, by id or slug, in display order; they must exist.',
    }),
  ),
  status: t.Optional(Status),
  publishedAt: t.Optional(
    t.Nullable(
      describe(
        DateTime,
        'When the post is (or was) published. Set to now when a post is published without one. Public keys see a published post only once this time has come.',
      ),
    ),
  ),
}

/** A PATCH body: any of the fields, at least one. */
function changesOf<P extends TProperties>(fields: P) {
  return t.Partial(t.Object(fields), {
    minProperties: 1,
    error: `must change at least one field (${Object.keys(fields).join(', ')})`,
  })
}

export const NewBlog = t.Object(blogFields)
export const BlogChanges = changesOf(blogFields)

const authorFields = {
  name: Text({ minLength: 1, maxLength: 200 }),
  slug: Slug,
  bio: t.Optional(t.Nullable(Text({ maxLength: 5000 }))),
}
export const NewAuthor = t.Object(authorFields)
export const AuthorChanges = changesOf(authorFields)

const tagFields = { name: Text({ minLength: 1, maxLength: 100 }), slug: Slug }
export const NewTag = t.Object(tagFields)
export const TagChanges = changesOf(tagFields)

export const BlogListQuery = t.Object({
  tag: t.Optional(describe(Slug, 'Only posts carrying the tag with this slug.')),
  author: t.Optional(describe(Slug, 'Only posts by the author with this slug.')),
  status: t.Optional(describe(Status, 'Filter by status (private keys); public keys see published posts only.')),
  limit: limitQuery(PAGE_LIMIT),
  cursor: CursorQuery,
})

export const PageQuery = t.Object({ limit: limitQuery(PAGE_LIMIT), cursor: CursorQuery })

const Ref = t.Object({ id: t.String(), slug: t.String(), name: t.String() })

export const Author = t.Object({
  id: t.String(),
  name: t.String(),
  slug: t.String(),
  bio: t.Nullable(t.String()),
  createdAt: t.String(),
  updatedAt: t.String(),
})

export const Tag = t.Object({ id: t.String(), name: t.String(), slug: t.String(), createdAt: t.String(), updatedAt: t.String() })

export const Blog = t.Object({
  id: t.String(),
  slug: t.String(),
  title: t.String(),
  excerpt: t.String(),
  content: t.String(),
  status: Status,
  publishedAt: t.Nullable(t.String()),
  authorId: t.Nullable(t.String()),
  author: t.Nullable(Ref),
  tags: t.Array(Ref),
  createdAt: t.String(),
  updatedAt: t.String(),
})

export const BlogPage = pageSchema(Blog)
export const AuthorPage = pageSchema(Author)
export const TagPage = pageSchema(Tag)

export type NewBlogInput = typeof NewBlog.static
export type BlogChangesInput = typeof BlogChanges.static
export type BlogRecord = typeof Blog.static
export type AuthorRecord = typeof Author.static
export type TagRecord = typeof Tag.static
/** An author or tag as a blog carries it. */
export type BlogRef = typeof Ref.static
