import { Elysia } from 'elysia'
import { alsoAnswers, noContent } from '../../http/openapi-document.ts'
import type { AreaDeps } from '../deps.ts'
import { pageSize } from '../shared/paging.ts'
import { acceptedDate, IdParams, strictBody } from '../shared/validation.ts'
import {
  Author,
  AuthorChanges,
  AuthorPage,
  Blog,
  BLOG_PAGE_DEFAULT,
  BlogChanges,
  BlogListQuery,
  BlogPage,
  IdOrSlugParams,
  NewAuthor,
  NewBlog,
  NewTag,
  PageQuery,
  Tag,
  TagChanges,
  TagPage,
} from './model.ts'
import {
  createAuthor,
  createBlog,
  createTag,
  deleteAuthor,
  deleteBlog,
  deleteTag,
  getAuthor,
  getBlog,
  getTag,
  listAuthors,
  listBlogs,
  listTags,
  updateAuthor,
  updateBlog,
  updateTag,
} from './service.ts'

const READ = { scope: 'BLOG_READ', public: true } as const
const WRITE = { scope: 'BLOG_WRITE', public: false } as const

const newBlog = withPublishedAt(strictBody(NewBlog))
const blogChanges = withPublishedAt(strictBody(BlogChanges))
const newAuthor = strictBody(NewAuthor)
const authorChanges = strictBody(AuthorChanges)
const newTag = strictBody(NewTag)
const tagChanges = strictBody(TagChanges)

/** The strict body check, then the date range the `date-time` format does not state (year 0 passes it). */
function withPublishedAt<S extends { transform(context: { body: unknown }): void }>(strict: S): S {
  return {
    ...strict,
    transform({ body }: { body: unknown }) {
      strict.transform({ body })
      const { publishedAt } = body as { publishedAt?: unknown }
      if (typeof publishedAt === 'string') acceptedDate(publishedAt, 'publishedAt')
    },
  }
}

const limitOf = (raw: string | undefined) => pageSize(raw, BLOG_PAGE_DEFAULT)

/**
 * Blogs (posts), authors and tags. Every GET is in the public set: public keys read
 * published posts only (a draft, or a post whose publishedAt is still ahead, is a 404 to
 * them), and all authors and tags. Writes are for private keys holding BLOG_WRITE.
 * Reads take an id or a slug; writes take the id. Every query is scoped to the key's
 * business.
 */
export function blogRoutes({ db, access }: AreaDeps) {
  return new Elysia({ name: 'area/blog', prefix: '/api/v0/blog', detail: { tags: ['blog'] } })
    .use(access)
    .get(
      '/blogs',
      ({ query, access: { key } }) =>
        listBlogs(db, key.businessId, key.type, {
          tag: query.tag,
          author: query.author,
          status: query.status,
          cursor: query.cursor,
          limit: limitOf(query.limit),
        }),
      {
        access: READ,
        query: BlogListQuery,
        response: BlogPage,
        detail: { summary: 'List blogs, newest first; filter by tag and author slug (public keys: published only)' },
      },
    )
    .get('/blogs/:id', ({ params, access: { key } }) => getBlog(db, key.businessId, key.type, params.id), {
      access: READ,
      params: IdOrSlugParams,
      response: Blog,
      detail: { summary: 'Show a blog by id or slug (public keys: published only)' },
    })
    .post(
      '/blogs',
      async ({ body, set, access: { key } }) => {
        const id = await createBlog(db, key.businessId, body)
        set.status = 201
        return getBlog(db, key.businessId, 'private', id)
      },
      {
        access: WRITE,
        body: newBlog.schema,
        transform: newBlog.transform,
        response: { 201: Blog },
        detail: { summary: 'Create a blog; author and tags must exist in this business', ...alsoAnswers('conflict') },
      },
    )
    .patch(
      '/blogs/:id',
      async ({ params, body, access: { key } }) => {
        await updateBlog(db, key.businessId, params.id, body)
        return getBlog(db, key.businessId, 'private', params.id)
      },
      {
        access: WRITE,
        params: IdParams,
        body: blogChanges.schema,
        transform: blogChanges.transform,
        response: Blog,
        detail: { summary: 'Change a blog; `tags` replaces the whole list', ...alsoAnswers('conflict') },
      },
    )
    .delete(
      '/blogs/:id',
      async ({ params, set, access: { key } }) => {
        await deleteBlog(db, key.businessId, params.id)
        set.status = 204
        return null
      },
      { access: WRITE, params: IdParams, detail: { summary: 'Delete a blog', ...noContent('Deleted') } },
    )
    .get(
      '/authors',
      ({ query, access: { key } }) => listAuthors(db, key.businessId, { cursor: query.cursor, limit: limitOf(query.limit) }),
      { access: READ, query: PageQuery, response: AuthorPage, detail: { summary: 'List authors by slug' } },
    )
    .get('/authors/:id', ({ params, access: { key } }) => getAuthor(db, key.businessId, params.id), {
      access: READ,
      params: IdOrSlugParams,
      response: Author,
      detail: { summary: 'Show an author by id or slug' },
    })
    .post(
      '/authors',
      async ({ body, set, access: { key } }) => {
        const author = await createAuthor(db, key.businessId, body)
        set.status = 201
        return author
      },
      {
        access: WRITE,
        body: newAuthor.schema,
        transform: newAuthor.transform,
        response: { 201: Author },
        detail: { summary: 'Create an author', ...alsoAnswers('conflict') },
      },
    )
    .patch('/authors/:id', ({ params, body, access: { key } }) => updateAuthor(db, key.businessId, params.id, body), {
      access: WRITE,
      params: IdParams,
      body: authorChanges.schema,
      transform: authorChanges.transform,
      response: Author,
      detail: { summary: 'Change an author', ...alsoAnswers('conflict') },
    })
    .delete(
      '/authors/:id',
      async ({ params, set, access: { key } }) => {
        await deleteAuthor(db, key.businessId, params.id)
        set.status = 204
        return null
      },
      {
        access: WRITE,
        params: IdParams,
        detail: {
          summary: 'Delete an author; refused (409) while blogs still name them',
          ...alsoAnswers('conflict'),
          ...noContent('Deleted'),
        },
      },
    )
    .get('/tags', ({ query, access: { key } }) => listTags(db, key.businessId, { cursor: query.cursor, limit: limitOf(query.limit) }), {
      access: READ,
      query: PageQuery,
      response: TagPage,
      detail: { summary: 'List tags by slug' },
    })
    .get('/tags/:id', ({ params, access: { key } }) => getTag(db, key.businessId, params.id), {
      access: READ,
      params: IdOrSlugParams,
      response: Tag,
      detail: { summary: 'Show a tag by id or slug' },
    })
    .post(
      '/tags',
      async ({ body, set, access: { key } }) => {
        const tag = await createTag(db, key.businessId, body)
        set.status = 201
        return tag
      },
      {
        access: WRITE,
        body: newTag.schema,
        transform: newTag.transform,
        response: { 201: Tag },
        detail: { summary: 'Create a tag', ...alsoAnswers('conflict') },
      },
    )
    .patch('/tags/:id', ({ params, body, access: { key } }) => updateTag(db, key.businessId, params.id, body), {
      access: WRITE,
      params: IdParams,
      body: tagChanges.schema,
      transform: tagChanges.transform,
      response: Tag,
      detail: { summary: 'Change a tag', ...alsoAnswers('conflict') },
    })
    .delete(
      '/tags/:id',
      async ({ params, set, access: { key } }) => {
        await deleteTag(db, key.businessId, params.id)
        set.status = 204
        return null
      },
      {
        access: WRITE,
        params: IdParams,
        detail: { summary: 'Delete a tag; it is removed from the blogs that carried it', ...noContent('Deleted') },
      },
    )
}
