import { Elysia } from 'elysia'
import type { ErrorCode } from '../../errors.ts'
import { alsoAnswers, noContent } from '../../http/openapi-document.ts'
import type { AreaDeps } from '../deps.ts'
import { pageSize } from '../../shared/paging.ts'
import { acceptedDate, IdParams, strictBody } from '../../shared/validation.ts'
import {
  Author,
  AuthorChanges,
  type AuthorRecord,
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
  type TagRecord,
} from './model.ts'
import {
  AUTHORS,
  createBlog,
  createNamed,
  deleteBlog,
  deleteNamed,
  getBlog,
  getNamed,
  listBlogs,
  type NamedKind,
  type NamedTable,
  listNamed,
  TAGS,
  updateBlog,
  updateNamed,
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
function withPublishedAt<S extends { check(context: { body: unknown }): void }>(strict: S): S {
  return {
    ...strict,
    check({ body }: { body: unknown }) {
      strict.check({ body })
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
export function blogRoutes(deps: AreaDeps) {
  const { db, keyChain } = deps
  return new Elysia({ name: 'area/blog', prefix: '/api/v0/blog', detail: { tags: ['blog'] } })
    .use(keyChain)
    .get(
      '/blogs',
      ({ query, grant: { key } }) =>
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
    .get('/blogs/:id', ({ params, grant: { key } }) => getBlog(db, key.businessId, key.type, params.id), {
      access: READ,
      params: IdOrSlugParams,
      response: Blog,
      detail: { summary: 'Show a blog by id or slug (public keys: published only)' },
    })
    .post(
      '/blogs',
      async ({ body, set, grant: { key } }) => {
        const id = await createBlog(db, key.businessId, body)
        set.status = 201
        return getBlog(db, key.businessId, 'private', id)
      },
      {
        access: WRITE,
        body: newBlog.schema,
        transform: newBlog.check,
        response: { 201: Blog },
        detail: { summary: 'Create a blog; author and tags must exist in this business', ...alsoAnswers('conflict') },
      },
    )
    .patch(
      '/blogs/:id',
      async ({ params, body, grant: { key } }) => {
        await updateBlog(db, key.businessId, params.id, body)
        return getBlog(db, key.businessId, 'private', params.id)
      },
      {
        access: WRITE,
        params: IdParams,
        body: blogChanges.schema,
        transform: blogChanges.check,
        response: Blog,
        detail: { summary: 'Change a blog; `tags` replaces the whole list', ...alsoAnswers('conflict') },
      },
    )
    .delete(
      '/blogs/:id',
      async ({ params, set, grant: { key } }) => {
        await deleteBlog(db, key.businessId, params.id)
        set.status = 204
        return null
      },
      { access: WRITE, params: IdParams, detail: { summary: 'Delete a blog', ...noContent('Deleted') } },
    )
    .use(
      namedRoutes(deps, {
        kind: AUTHORS,
        newBody: newAuthor,
        changes: authorChanges,
        record: Author,
        page: AuthorPage,
        deleteDetail: { summary: 'Delete an author; refused (409) while blogs still name them', ...alsoAnswers('conflict') },
      }),
    )
    .use(
      namedRoutes(deps, {
        kind: TAGS,
        newBody: newTag,
        changes: tagChanges,
        record: Tag,
        page: TagPage,
        deleteDetail: { summary: 'Delete a tag; it is removed from the blogs that carried it' },
      }),
    )
}

/** What the routes of authors or tags take: the kind, its schemas, and what its delete answers. */
interface NamedResource<T extends NamedTable, R extends AuthorRecord | TagRecord> {
  kind: NamedKind<T, R>
  newBody: typeof newAuthor | typeof newTag
  changes: typeof authorChanges | typeof tagChanges
  record: typeof Author | typeof Tag
  page: typeof AuthorPage | typeof TagPage
  deleteDetail: { summary: string; 'x-error-codes'?: ErrorCode[] }
}

/**
 * The five routes of authors or tags: list by slug, show by id or slug, create, change,
 * delete. Mounted inside blogRoutes, which gives the /api/v0/blog prefix.
 */
function namedRoutes<T extends NamedTable, R extends AuthorRecord | TagRecord>({ db, keyChain }: AreaDeps, resource: NamedResource<T, R>) {
  const { kind } = resource
  const one = `${kind.noun === 'author' ? 'an' : 'a'} ${kind.noun}`
  return new Elysia({ name: `area/blog/${kind.path}`, detail: { tags: ['blog'] } })
    .use(keyChain)
    .get(
      `/${kind.path}`,
      ({ query, grant: { key } }) => listNamed(db, kind, key.businessId, { cursor: query.cursor, limit: limitOf(query.limit) }),
      {
        access: READ,
        query: PageQuery,
        response: resource.page,
        detail: { summary: `List ${kind.path} by slug` },
      },
    )
    .get(`/${kind.path}/:id`, ({ params, grant: { key } }) => getNamed(db, kind, key.businessId, params.id), {
      access: READ,
      params: IdOrSlugParams,
      response: resource.record,
      detail: { summary: `Show ${one} by id or slug` },
    })
    .post(
      `/${kind.path}`,
      async ({ body, set, grant: { key } }) => {
        const record = await createNamed(db, kind, key.businessId, body)
        set.status = 201
        return record
      },
      {
        access: WRITE,
        body: resource.newBody.schema,
        transform: resource.newBody.check,
        response: { 201: resource.record },
        detail: { summary: `Create ${one}`, ...alsoAnswers('conflict') },
      },
    )
    .patch(`/${kind.path}/:id`, ({ params, body, grant: { key } }) => updateNamed(db, kind, key.businessId, params.id, body), {
      access: WRITE,
      params: IdParams,
      body: resource.changes.schema,
      transform: resource.changes.check,
      response: resource.record,
      detail: { summary: `Change ${one}`, ...alsoAnswers('conflict') },
    })
    .delete(
      `/${kind.path}/:id`,
      async ({ params, set, grant: { key } }) => {
        await deleteNamed(db, kind, key.businessId, params.id)
        set.status = 204
        return null
      },
      { access: WRITE, params: IdParams, detail: { ...resource.deleteDetail, ...noContent('Deleted') } },
    )
}
