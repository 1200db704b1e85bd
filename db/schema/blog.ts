import { sql } from 'drizzle-orm'
import { check, foreignKey, index, integer, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core'
import { businesses } from './core.ts'

// Millisecond timestamps: they round-trip through a JS Date exactly, so a cursor built
// from a row's timestamp finds the row again.
const ms = { withTimezone: true, precision: 3 } as const

/**
 * Blog authors. `slug` is unique per business. The (business_id, id) pair is unique so
 * that posts can reference an author of their own business only (composite foreign key).
 */
export const blogAuthors = pgTable(
  'blog_authors',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    bio: text('bio'),
    createdAt: timestamp('created_at', ms).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', ms).notNull().defaultNow(),
  },
  (table) => [
    unique('blog_authors_business_slug_unique').on(table.businessId, table.slug),
    unique('blog_authors_business_id_unique').on(table.businessId, table.id),
  ],
)

/** Blog tags; `slug` is unique per business. */
export const blogTags = pgTable(
  'blog_tags',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    createdAt: timestamp('created_at', ms).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', ms).notNull().defaultNow(),
  },
  (table) => [
    unique('blog_tags_business_slug_unique').on(table.businessId, table.slug),
    unique('blog_tags_business_id_unique').on(table.businessId, table.id),
  ],
)

/**
 * Blog posts. Public keys see rows with status 'published' and a `publishedAt` that has
 * come. The author reference is a composite key on (business_id, author_id), so a post
 * can never point at another business's author; deleting an author who still has posts
 * is refused by the database (ON DELETE RESTRICT), which the API answers with 409.
 */
export const blogs = pgTable(
  'blogs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    slug: text('slug').notNull(),
    title: text('title').notNull(),
    excerpt: text('excerpt').notNull().default(''),
    content: text('content').notNull(),
    authorId: uuid('author_id'),
    status: text('status', { enum: ['draft', 'published'] })
      .notNull()
      .default('draft'),
    publishedAt: timestamp('published_at', ms),
    createdAt: timestamp('created_at', ms).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', ms).notNull().defaultNow(),
  },
  (table) => [
    unique('blogs_business_slug_unique').on(table.businessId, table.slug),
    unique('blogs_business_id_unique').on(table.businessId, table.id),
    foreignKey({
      name: 'blogs_author_same_business_fk',
      columns: [table.businessId, table.authorId],
      foreignColumns: [blogAuthors.businessId, blogAuthors.id],
    }).onDelete('restrict'),
    check('blogs_status_check', sql`${table.status} in ('draft', 'published')`),
    // The listing order: newest first by publication (drafts by creation).
    index('blogs_business_order_idx').on(table.businessId, sql`coalesce(${table.publishedAt}, ${table.createdAt}) desc`, table.id.desc()),
    index('blogs_author_idx').on(table.authorId),
  ],
)

/**
 * Which tags a post carries. Both references are composite keys with the business, so a
 * post and its tags always belong to one business. Deleting a post or a tag removes its
 * rows here (a deleted tag is detached from its posts).
 */
export const blogPostTags = pgTable(
  'blog_post_tags',
  {
    businessId: uuid('business_id').notNull(),
    blogId: uuid('blog_id').notNull(),
    tagId: uuid('tag_id').notNull(),
    /** The tag's place in the list the client sent, so answers keep its order. */
    position: integer('position').notNull(),
  },
  (table) => [
    primaryKey({ name: 'blog_post_tags_pk', columns: [table.blogId, table.tagId] }),
    foreignKey({
      name: 'blog_post_tags_blog_fk',
      columns: [table.businessId, table.blogId],
      foreignColumns: [blogs.businessId, blogs.id],
    }).onDelete('cascade'),
    foreignKey({
      name: 'blog_post_tags_tag_fk',
      columns: [table.businessId, table.tagId],
      foreignColumns: [blogTags.businessId, blogTags.id],
    }).onDelete('cascade'),
    index('blog_post_tags_tag_idx').on(table.tagId),
  ],
)
