import { describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { blogAuthors, blogPostTags, blogs, blogTags } from '../../db/schema/index.ts'
import { testDatabase } from '../support/database.ts'
import { call, errorOf, seedBusiness, seedKey, testService, type CallOptions } from '../support/service.ts'

const ORIGIN = 'https://www.example.com'
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000'

async function setup() {
  const service = await testService()
  const businessId = await seedBusiness(service)
  const writer = (await seedKey(service, businessId, { type: 'private', scopes: ['BLOG_READ', 'BLOG_WRITE'] })).key
  const reader = (await seedKey(service, businessId, { type: 'public', scopes: ['BLOG_READ'] })).key
  return { service, businessId, writer, reader }
}
type Setup = Awaited<ReturnType<typeof setup>>

/** A private request with the writer key. */
function write(s: Setup, path: string, options: Omit<CallOptions, 'key'> = {}) {
  return call(s.service, `/api/v0/blog${path}`, { key: s.writer, ...options })
}

/** A public request from an allowed origin. */
function read(s: Setup, path: string) {
  return call(s.service, `/api/v0/blog${path}`, { key: s.reader, origin: ORIGIN })
}

async function created<T = Record<string, unknown>>(response: Response): Promise<T> {
  expect(response.status).toBe(201)
  return (await response.json()) as T
}

interface BlogBody {
  id: string
  slug: string
  status: string
  publishedAt: string | null
  authorId: string | null
  author: { id: string; slug: string; name: string } | null
  tags: { id: string; slug: string; name: string }[]
  [field: string]: unknown
}

const createAuthor = (s: Setup, slug = 'ada', name = 'Ada Lovelace') =>
  write(s, '/authors', { body: { name, slug } }).then((r) => created<{ id: string; slug: string }>(r))
const createTag = (s: Setup, slug: string, name = slug) =>
  write(s, '/tags', { body: { name, slug } }).then((r) => created<{ id: string; slug: string }>(r))
const createBlog = (s: Setup, body: Record<string, unknown>) =>
  write(s, '/blogs', { body: { title: 'A title', content: 'Some content', ...body } }).then((r) => created<BlogBody>(r))

async function counts() {
  const [row] = await queryRows<Record<string, number>>(
    (await testDatabase()).db,
    sql`select (select count(*)::int from blogs) as blogs, (select count(*)::int from blog_authors) as authors,
               (select count(*)::int from blog_tags) as tags, (select count(*)::int from blog_post_tags) as "postTags"`,
  )
  return row!
}

async function storedBlog(id: string) {
  const { db } = await testDatabase()
  const [row] = await db.select().from(blogs).where(eq(blogs.id, id))
  return row
}

// Refusals for every route (no key, bad keys, origins, scopes, budgets; nothing written):
// test/api/route-matrix.test.ts, from the route table in test/support/route-table.ts.

// ---- Blogs: writes -----------------------------------------------------------------

describe('POST /api/v0/blog/blogs', () => {
  test('creates a draft with its author and tags, and answers 201 with the post', async () => {
    const s = await setup()
    const author = await createAuthor(s)
    const news = await createTag(s, 'news', 'News')
    const release = await createTag(s, 'release', 'Release')
    const response = await write(s, '/blogs', {
      body: { slug: 'hello-world', title: 'Hello', excerpt: 'Short', content: '# Hi', authorId: author.id, tags: ['release', news.id] },
    })
    const blog = await created<BlogBody>(response)
    expect(blog).toMatchObject({
      slug: 'hello-world',
      title: 'Hello',
      excerpt: 'Short',
      content: '# Hi',
      status: 'draft',
      publishedAt: null,
      authorId: author.id,
      author: { id: author.id, slug: 'ada', name: 'Ada Lovelace' },
      tags: [
        { id: release.id, slug: 'release', name: 'Release' },
        { id: news.id, slug: 'news', name: 'News' },
      ],
    })
    const stored = await storedBlog(blog.id)
    expect(stored).toMatchObject({ businessId: s.businessId, slug: 'hello-world', status: 'draft', authorId: author.id })
    const { db } = await testDatabase()
    const links = await db.select().from(blogPostTags).where(eq(blogPostTags.blogId, blog.id))
    expect(links.map((l) => [l.tagId, l.position]).sort()).toEqual(
      [
        [release.id, 0],
        [news.id, 1],
      ].sort(),
    )
  })

  test('a post created published gets publishedAt now', async () => {
    const s = await setup()
    const before = Date.now()
    const blog = await createBlog(s, { slug: 'live', status: 'published' })
    expect(blog.status).toBe('published')
    expect(Date.parse(blog.publishedAt!)).toBeGreaterThanOrEqual(before - 60_000)
    expect((await storedBlog(blog.id))!.publishedAt).not.toBeNull()
  })

  test('keeps a publishedAt that is given', async () => {
    const s = await setup()
    const blog = await createBlog(s, { slug: 'dated', status: 'published', publishedAt: '2024-03-01T10:00:00Z' })
    expect(blog.publishedAt).toBe('2024-03-01T10:00:00.000Z')
  })

  test('a slug already used in the business: 409 conflict, nothing written', async () => {
    const s = await setup()
    await createBlog(s, { slug: 'taken' })
    const response = await write(s, '/blogs', { body: { slug: 'taken', title: 'Other', content: 'x' } })
    expect(response.status).toBe(409)
    const error = await errorOf(response)
    expect(error.code).toBe('conflict')
    expect(error.message).toContain('"taken"')
    expect((await counts()).blogs).toBe(1)
  })

  test('the same slug in another business is fine', async () => {
    const s = await setup()
    await createBlog(s, { slug: 'shared' })
    const otherBusiness = await seedBusiness(s.service, 'Other')
    const { key } = await seedKey(s.service, otherBusiness, { type: 'private', scopes: ['BLOG_WRITE'] })
    const response = await call(s.service, '/api/v0/blog/blogs', { key, body: { slug: 'shared', title: 'T', content: 'x' } })
    expect(response.status).toBe(201)
    expect((await counts()).blogs).toBe(2)
  })

  test('an unknown author: 400 naming authorId, nothing written', async () => {
    const s = await setup()
    const response = await write(s, '/blogs', { body: { slug: 'p', title: 'T', content: 'x', authorId: UNKNOWN_ID } })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('"authorId"')
    expect((await counts()).blogs).toBe(0)
  })

  test("another business's author: 400 naming authorId", async () => {
    const s = await setup()
    const other = await setup()
    const foreign = await createAuthor(other)
    const response = await write(s, '/blogs', { body: { slug: 'p', title: 'T', content: 'x', authorId: foreign.id } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"authorId"')
    expect((await counts()).blogs).toBe(0)
  })

  test('an unknown tag: 400 naming its place in tags, nothing written', async () => {
    const s = await setup()
    await createTag(s, 'news')
    const response = await write(s, '/blogs', { body: { slug: 'p', title: 'T', content: 'x', tags: ['news', 'missing'] } })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.message).toContain('"tags[1]"')
    expect(error.message).toContain('"missing"')
    expect(await counts()).toMatchObject({ blogs: 0, postTags: 0 })
  })

  test("another business's tag, by id or by slug: 400", async () => {
    const s = await setup()
    const other = await setup()
    const foreign = await createTag(other, 'theirs')
    for (const ref of [foreign.id, 'theirs']) {
      const response = await write(s, '/blogs', { body: { slug: 'p', title: 'T', content: 'x', tags: [ref] } })
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toContain('"tags[0]"')
    }
    expect((await counts()).blogs).toBe(0)
  })

  test('a tag named twice (by slug and id) is kept once', async () => {
    const s = await setup()
    const news = await createTag(s, 'news')
    const blog = await createBlog(s, { slug: 'p', tags: ['news', news.id] })
    expect(blog.tags.map((t) => t.slug)).toEqual(['news'])
  })

  const invalid: [string, Record<string, unknown>, string][] = [
    ['slug with capitals', { slug: 'Hello' }, 'slug'],
    ['slug with a double hyphen', { slug: 'a--b' }, 'slug'],
    ['slug shaped like a UUID', { slug: UNKNOWN_ID }, 'slug'],
    ['slug over 100 characters', { slug: 'a'.repeat(101) }, 'slug'],
    ['missing title', { title: undefined }, 'title'],
    ['empty title', { title: '' }, 'title'],
    ['title over 200 characters', { title: 'x'.repeat(201) }, 'title'],
    ['title holding U+0000', { title: 'a\u0000b' }, 'title'],
    ['content that is a number', { content: 42 }, 'content'],
    ['excerpt over 1000 characters', { excerpt: 'x'.repeat(1001) }, 'excerpt'],
    ['authorId that is no UUID', { authorId: 'ada' }, 'authorId'],
    ['tags that is a string', { tags: 'news' }, 'tags'],
    ['more than 20 tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
    ['an unknown status', { status: 'archived' }, 'status'],
    ['publishedAt that is no date', { publishedAt: 'yesterday' }, 'publishedAt'],
  ]
  for (const [what, change, field] of invalid) {
    test(`${what}: 400 naming "${field}", nothing written`, async () => {
      const s = await setup()
      const response = await write(s, '/blogs', { body: { slug: 'ok', title: 'T', content: 'x', ...change } })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toContain(`"${field}"`)
      expect((await counts()).blogs).toBe(0)
    })
  }

  test('a body that is not JSON: 400 invalid_request', async () => {
    const s = await setup()
    const response = await write(s, '/blogs', { body: '{"slug":' })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).code).toBe('invalid_request')
  })
})

describe('PATCH /api/v0/blog/blogs/:id', () => {
  test('changes the fields sent and keeps the others', async () => {
    const s = await setup()
    const blog = await createBlog(s, { slug: 'p', excerpt: 'Kept' })
    const response = await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: { title: 'New title' } })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ id: blog.id, title: 'New title', excerpt: 'Kept', slug: 'p' })
    expect((await storedBlog(blog.id))!.title).toBe('New title')
  })

  test('publishing a draft sets publishedAt; unpublishing keeps it for republishing', async () => {
    const s = await setup()
    const blog = await createBlog(s, { slug: 'p' })
    const published = (await (await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: { status: 'published' } })).json()) as BlogBody
    expect(published.publishedAt).not.toBeNull()
    const draft = (await (await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: { status: 'draft' } })).json()) as BlogBody
    expect(draft).toMatchObject({ status: 'draft', publishedAt: published.publishedAt })
    const again = (await (await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: { status: 'published' } })).json()) as BlogBody
    expect(again.publishedAt).toBe(published.publishedAt)
  })

  test('tags replace the whole list; authorId null removes the author', async () => {
    const s = await setup()
    const author = await createAuthor(s)
    await createTag(s, 'a')
    await createTag(s, 'b')
    const blog = await createBlog(s, { slug: 'p', authorId: author.id, tags: ['a'] })
    const response = await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: { tags: ['b'], authorId: null } })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ tags: [{ slug: 'b' }], authorId: null, author: null })
    expect((await counts()).postTags).toBe(1)
  })

  test('a slug another blog has: 409 conflict, nothing changed', async () => {
    const s = await setup()
    await createBlog(s, { slug: 'first' })
    const second = await createBlog(s, { slug: 'second' })
    const response = await write(s, `/blogs/${second.id}`, { method: 'PATCH', body: { slug: 'first', title: 'Changed' } })
    expect(response.status).toBe(409)
    expect((await errorOf(response)).code).toBe('conflict')
    expect(await storedBlog(second.id)).toMatchObject({ slug: 'second', title: 'A title' })
  })

  test('an unknown tag: 400, and the old tags stay', async () => {
    const s = await setup()
    await createTag(s, 'a')
    const blog = await createBlog(s, { slug: 'p', tags: ['a'] })
    const response = await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: { tags: ['nope'] } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"tags[0]"')
    expect((await counts()).postTags).toBe(1)
  })

  test('an empty body: 400', async () => {
    const s = await setup()
    const blog = await createBlog(s, { slug: 'p' })
    const response = await write(s, `/blogs/${blog.id}`, { method: 'PATCH', body: {} })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('at least one field')
  })

  test('an id that is no UUID: 400 naming id', async () => {
    const s = await setup()
    const response = await write(s, '/blogs/hello', { method: 'PATCH', body: { title: 'T' } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"id"')
  })

  test("another business's blog: 404, unchanged", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await createBlog(other, { slug: 'theirs' })
    const response = await write(s, `/blogs/${theirs.id}`, { method: 'PATCH', body: { title: 'Mine now' } })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('not_found')
    expect((await storedBlog(theirs.id))!.title).toBe('A title')
  })
})

describe('DELETE /api/v0/blog/blogs/:id', () => {
  test('deletes the blog and its tag links: 204', async () => {
    const s = await setup()
    await createTag(s, 'a')
    const blog = await createBlog(s, { slug: 'p', tags: ['a'] })
    const response = await write(s, `/blogs/${blog.id}`, { method: 'DELETE' })
    expect(response.status).toBe(204)
    expect(await counts()).toMatchObject({ blogs: 0, postTags: 0, tags: 1 })
  })

  test("another business's blog: 404, kept", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await createBlog(other, { slug: 'theirs' })
    const response = await write(s, `/blogs/${theirs.id}`, { method: 'DELETE' })
    expect(response.status).toBe(404)
    expect(await storedBlog(theirs.id)).toBeDefined()
  })
})

// ---- Blogs: reads ------------------------------------------------------------------

describe('GET /api/v0/blog/blogs', () => {
  test('a public key sees published posts only', async () => {
    const s = await setup()
    await createBlog(s, { slug: 'draft' })
    const live = await createBlog(s, { slug: 'live', status: 'published' })
    const response = await read(s, '/blogs')
    expect(response.status).toBe(200)
    const page = (await response.json()) as { data: BlogBody[]; nextCursor: string | null }
    expect(page.data.map((b) => b.id)).toEqual([live.id])
    expect(page.nextCursor).toBeNull()
  })

  test('a public key does not see a post scheduled for later', async () => {
    const s = await setup()
    await createBlog(s, { slug: 'later', status: 'published', publishedAt: new Date(Date.now() + 86_400_000).toISOString() })
    const page = (await (await read(s, '/blogs')).json()) as { data: BlogBody[] }
    expect(page.data).toEqual([])
    const privatePage = (await (await write(s, '/blogs')).json()) as { data: BlogBody[] }
    expect(privatePage.data.map((b) => b.slug)).toEqual(['later'])
  })

  test('a public key asking for drafts gets none', async () => {
    const s = await setup()
    await createBlog(s, { slug: 'draft' })
    const page = (await (await read(s, '/blogs?status=draft')).json()) as { data: BlogBody[] }
    expect(page.data).toEqual([])
  })

  test('a private key sees drafts too, and filters by status', async () => {
    const s = await setup()
    const draft = await createBlog(s, { slug: 'draft' })
    const live = await createBlog(s, { slug: 'live', status: 'published' })
    const all = (await (await write(s, '/blogs')).json()) as { data: BlogBody[] }
    expect(all.data.map((b) => b.id).sort()).toEqual([draft.id, live.id].sort())
    const drafts = (await (await write(s, '/blogs?status=draft')).json()) as { data: BlogBody[] }
    expect(drafts.data.map((b) => b.id)).toEqual([draft.id])
  })

  test('filters by tag slug and by author slug', async () => {
    const s = await setup()
    const ada = await createAuthor(s, 'ada')
    const bob = await createAuthor(s, 'bob', 'Bob')
    await createTag(s, 'news')
    const adaNews = await createBlog(s, { slug: 'one', authorId: ada.id, tags: ['news'], status: 'published' })
    const bobNews = await createBlog(s, { slug: 'two', authorId: bob.id, tags: ['news'], status: 'published' })
    await createBlog(s, { slug: 'three', authorId: ada.id, status: 'published' })
    const page = (await (await read(s, '/blogs?tag=news&author=ada')).json()) as { data: BlogBody[] }
    expect(page.data.map((b) => b.id)).toEqual([adaNews.id])
    const byTag = (await (await read(s, '/blogs?tag=news')).json()) as { data: BlogBody[] }
    expect(byTag.data.map((b) => b.id).sort()).toEqual([adaNews.id, bobNews.id].sort())
    const unknown = (await (await read(s, '/blogs?author=nobody')).json()) as { data: BlogBody[] }
    expect(unknown.data).toEqual([])
  })

  test('pages newest first with a cursor, each post once', async () => {
    const s = await setup()
    const ids: string[] = []
    for (let day = 1; day <= 5; day++) {
      const blog = await createBlog(s, { slug: `p${day}`, status: 'published', publishedAt: `2024-01-0${day}T00:00:00Z` })
      ids.unshift(blog.id)
    }
    const seen: string[] = []
    let cursor: string | null = null
    for (let pages = 0; pages < 5; pages++) {
      const response = await read(s, `/blogs?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(response.status).toBe(200)
      const page = (await response.json()) as { data: BlogBody[]; nextCursor: string | null }
      seen.push(...page.data.map((b) => b.id))
      cursor = page.nextCursor
      if (!cursor) break
    }
    expect(seen).toEqual(ids)
    expect(cursor).toBeNull()
  })

  test('a cursor this API did not give out: 400 naming cursor', async () => {
    const s = await setup()
    const response = await read(s, '/blogs?cursor=bm9wZQ')
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"cursor"')
  })

  const invalidQueries: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=ten', 'limit'],
    ['tag=Not%20A%20Slug', 'tag'],
    ['status=archived', 'status'],
  ]
  for (const [query, field] of invalidQueries) {
    test(`?${query}: 400 naming ${field}`, async () => {
      const s = await setup()
      const response = await read(s, `/blogs?${query}`)
      expect(response.status).toBe(400)
      expect((await errorOf(response)).message).toContain(`"${field}"`)
    })
  }

  test("never lists another business's posts", async () => {
    const s = await setup()
    const other = await setup()
    await createBlog(other, { slug: 'theirs', status: 'published' })
    const page = (await (await read(s, '/blogs')).json()) as { data: BlogBody[] }
    expect(page.data).toEqual([])
  })
})

describe('GET /api/v0/blog/blogs/:id', () => {
  test('a public key reads a published post by slug and by id', async () => {
    const s = await setup()
    const live = await createBlog(s, { slug: 'live', status: 'published' })
    for (const ref of ['live', live.id, live.id.toUpperCase()]) {
      const response = await read(s, `/blogs/${ref}`)
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ id: live.id, slug: 'live', status: 'published' })
    }
  })

  test('a draft is 404 to a public key and readable with a private key', async () => {
    const s = await setup()
    const draft = await createBlog(s, { slug: 'draft' })
    const refused = await read(s, '/blogs/draft')
    expect(refused.status).toBe(404)
    const error = await errorOf(refused)
    expect(error.code).toBe('not_found')
    expect(JSON.stringify(error)).not.toContain('Some content')
    const response = await write(s, `/blogs/${draft.id}`)
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ id: draft.id, status: 'draft' })
  })

  test("another business's post, by id or slug: 404", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await createBlog(other, { slug: 'theirs', status: 'published' })
    for (const ref of [theirs.id, 'theirs']) {
      expect((await read(s, `/blogs/${ref}`)).status).toBe(404)
      expect((await write(s, `/blogs/${ref}`)).status).toBe(404)
    }
  })

  test('a reference with characters no id or slug has: 400 naming id', async () => {
    const s = await setup()
    const response = await read(s, '/blogs/a_b')
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"id"')
  })
})

// ---- Authors -----------------------------------------------------------------------

describe('authors', () => {
  test('POST creates an author: 201 with the record', async () => {
    const s = await setup()
    const response = await write(s, '/authors', { body: { name: 'Ada Lovelace', slug: 'ada', bio: 'Mathematician' } })
    const author = await created<{ id: string }>(response)
    expect(author).toMatchObject({ name: 'Ada Lovelace', slug: 'ada', bio: 'Mathematician' })
    const { db } = await testDatabase()
    const [row] = await db.select().from(blogAuthors).where(eq(blogAuthors.id, author.id))
    expect(row).toMatchObject({ businessId: s.businessId, slug: 'ada', bio: 'Mathematician' })
  })

  test('POST with a slug in use: 409 conflict', async () => {
    const s = await setup()
    await createAuthor(s, 'ada')
    const response = await write(s, '/authors', { body: { name: 'Another Ada', slug: 'ada' } })
    expect(response.status).toBe(409)
    expect((await counts()).authors).toBe(1)
  })

  test('POST without a name: 400 naming name', async () => {
    const s = await setup()
    const response = await write(s, '/authors', { body: { slug: 'ada' } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"name"')
    expect((await counts()).authors).toBe(0)
  })

  test('GET lists by slug with cursor pages; a public key reads them', async () => {
    const s = await setup()
    for (const slug of ['cy', 'ada', 'bob']) await createAuthor(s, slug, slug)
    const first = (await (await read(s, '/authors?limit=2')).json()) as { data: { slug: string }[]; nextCursor: string }
    expect(first.data.map((a) => a.slug)).toEqual(['ada', 'bob'])
    const second = (await (await read(s, `/authors?limit=2&cursor=${first.nextCursor}`)).json()) as {
      data: { slug: string }[]
      nextCursor: string | null
    }
    expect(second).toMatchObject({ data: [{ slug: 'cy' }], nextCursor: null })
  })

  test('GET by slug or id; another business: 404', async () => {
    const s = await setup()
    const other = await setup()
    const ada = await createAuthor(s, 'ada')
    const theirs = await createAuthor(other, 'bob')
    expect(await (await read(s, '/authors/ada')).json()).toMatchObject({ id: ada.id })
    expect(await (await read(s, `/authors/${ada.id}`)).json()).toMatchObject({ slug: 'ada' })
    expect((await read(s, `/authors/${theirs.id}`)).status).toBe(404)
    expect((await read(s, '/authors/bob')).status).toBe(404)
  })

  test('PATCH changes an author; bio null clears it', async () => {
    const s = await setup()
    const ada = await createAuthor(s)
    await write(s, `/authors/${ada.id}`, { method: 'PATCH', body: { bio: 'x' } })
    const response = await write(s, `/authors/${ada.id}`, { method: 'PATCH', body: { name: 'Ada King', bio: null } })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ name: 'Ada King', slug: 'ada', bio: null })
  })

  test('PATCH to a slug in use: 409; another business: 404', async () => {
    const s = await setup()
    const other = await setup()
    await createAuthor(s, 'ada')
    const bob = await createAuthor(s, 'bob')
    const theirs = await createAuthor(other, 'cy')
    expect((await write(s, `/authors/${bob.id}`, { method: 'PATCH', body: { slug: 'ada' } })).status).toBe(409)
    expect((await write(s, `/authors/${theirs.id}`, { method: 'PATCH', body: { name: 'Mine' } })).status).toBe(404)
    const { db } = await testDatabase()
    const [row] = await db.select().from(blogAuthors).where(eq(blogAuthors.id, theirs.id))
    expect(row!.name).toBe('Ada Lovelace')
  })

  test('DELETE an author with blogs: 409 naming the count, author and blogs kept', async () => {
    const s = await setup()
    const ada = await createAuthor(s)
    await createBlog(s, { slug: 'p', authorId: ada.id })
    const response = await write(s, `/authors/${ada.id}`, { method: 'DELETE' })
    expect(response.status).toBe(409)
    const error = await errorOf(response)
    expect(error.code).toBe('conflict')
    expect(error.message).toContain('1 blog')
    expect(await counts()).toMatchObject({ authors: 1, blogs: 1 })
  })

  test('DELETE an author without blogs: 204; another business: 404', async () => {
    const s = await setup()
    const other = await setup()
    const ada = await createAuthor(s)
    const theirs = await createAuthor(other, 'bob')
    expect((await write(s, `/authors/${theirs.id}`, { method: 'DELETE' })).status).toBe(404)
    expect((await write(s, `/authors/${ada.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await counts()).authors).toBe(1)
  })
})

// ---- Tags --------------------------------------------------------------------------

describe('tags', () => {
  test('POST creates a tag: 201; a slug in use: 409', async () => {
    const s = await setup()
    const tag = await createTag(s, 'news', 'News')
    expect(tag).toMatchObject({ slug: 'news', name: 'News' })
    const { db } = await testDatabase()
    const [row] = await db.select().from(blogTags).where(eq(blogTags.id, tag.id))
    expect(row).toMatchObject({ businessId: s.businessId, name: 'News' })
    const again = await write(s, '/tags', { body: { name: 'News again', slug: 'news' } })
    expect(again.status).toBe(409)
    expect((await counts()).tags).toBe(1)
  })

  test('POST with a name over 100 characters: 400 naming name', async () => {
    const s = await setup()
    const response = await write(s, '/tags', { body: { name: 'x'.repeat(101), slug: 'x' } })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('"name"')
  })

  test('GET lists and reads tags for a public key; another business: 404', async () => {
    const s = await setup()
    const other = await setup()
    const news = await createTag(s, 'news')
    const theirs = await createTag(other, 'theirs')
    const page = (await (await read(s, '/tags')).json()) as { data: { id: string }[] }
    expect(page.data.map((t) => t.id)).toEqual([news.id])
    expect(await (await read(s, '/tags/news')).json()).toMatchObject({ id: news.id })
    expect((await read(s, `/tags/${theirs.id}`)).status).toBe(404)
  })

  test('PATCH renames a tag and blogs show the new name', async () => {
    const s = await setup()
    const tag = await createTag(s, 'news', 'News')
    const blog = await createBlog(s, { slug: 'p', tags: ['news'] })
    const response = await write(s, `/tags/${tag.id}`, { method: 'PATCH', body: { name: 'Latest', slug: 'latest' } })
    expect(response.status).toBe(200)
    expect(await (await write(s, `/blogs/${blog.id}`)).json()).toMatchObject({ tags: [{ slug: 'latest', name: 'Latest' }] })
  })

  test('DELETE detaches the tag from its blogs: 204, blogs kept', async () => {
    const s = await setup()
    const tag = await createTag(s, 'news')
    const blog = await createBlog(s, { slug: 'p', tags: ['news'] })
    expect((await write(s, `/tags/${tag.id}`, { method: 'DELETE' })).status).toBe(204)
    expect(await counts()).toMatchObject({ tags: 0, postTags: 0, blogs: 1 })
    expect(await (await write(s, `/blogs/${blog.id}`)).json()).toMatchObject({ tags: [] })
  })

  test("PATCH or DELETE another business's tag: 404, kept", async () => {
    const s = await setup()
    const other = await setup()
    const theirs = await createTag(other, 'theirs')
    expect((await write(s, `/tags/${theirs.id}`, { method: 'PATCH', body: { name: 'Mine' } })).status).toBe(404)
    expect((await write(s, `/tags/${theirs.id}`, { method: 'DELETE' })).status).toBe(404)
    expect((await counts()).tags).toBe(1)
  })
})
