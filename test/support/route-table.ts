import type { RouteAccess, Scope } from '../../src/access/scopes.ts'
import type { Service } from '../../src/app.ts'
import {
  analyticsErasures,
  audienceListMembers,
  audienceLists,
  blogAuthors,
  blogPostTags,
  blogs,
  blogTags,
  companies,
  flowRuns,
  flows,
  memoryDocuments,
  people,
} from '../../db/schema/index.ts'
import { testDatabase, testEventsDatabase } from './database.ts'
import { seedBusiness, seedKey } from './service.ts'

/**
 * One valid request for every /api/v0 route (the model: Unkey's common route tests). The
 * security matrix (test/api/route-matrix.test.ts) sends each one with every kind of bad
 * key and checks it succeeds with a good one, so the table cannot rot; a route the app
 * declares that is missing here fails that test. Other tests take their route lists from
 * here instead of writing them again.
 */

/** What `seedWorld` stored: one of everything a request can name. */
export interface World {
  service: Service
  businessId: string
  /** A private key with every scope; flow runs need a key that started them. */
  ownerKeyId: string
  personId: string
  /** The seeded person's email; a member of the list `listSlug`. */
  personEmail: string
  companyId: string
  listSlug: string
  authorId: string
  tagId: string
  /** A published post, by no author (so the author can be deleted), tagged `tagId`. */
  blogId: string
  flowId: string
  runId: string
  documentId: string
  /** A finished erasure request of the business. */
  erasureId: string
}

/** A business with a person on a list, a company, a blog post with its tag and an author, a flow run, a memory document. */
export async function seedWorld(service: Service): Promise<World> {
  const { db } = await testDatabase()
  const businessId = await seedBusiness(service)
  const owner = await seedKey(service, businessId, { type: 'private', name: 'owner', scopes: ['FLOW_TRIGGER'] })
  const personEmail = 'member@example.com'
  // Independent rows in parallel: on PostgreSQL each is a round trip, and every matrix case seeds a world.
  const [[person], [company], [list], [author], [tag], [blog], [flow], [document], [erasure]] = await Promise.all([
    db.insert(people).values({ businessId, email: personEmail, externalId: 'u1', firstName: 'Ada' }).returning(),
    db.insert(companies).values({ businessId, domain: 'acme.example', name: 'Acme' }).returning(),
    db.insert(audienceLists).values({ businessId, slug: 'news', name: 'News' }).returning(),
    db.insert(blogAuthors).values({ businessId, slug: 'ada', name: 'Ada' }).returning(),
    db.insert(blogTags).values({ businessId, slug: 'news', name: 'News' }).returning(),
    db
      .insert(blogs)
      .values({ businessId, slug: 'hello', title: 'Hello', content: 'Hi', status: 'published', publishedAt: new Date(Date.now() - 60_000) })
      .returning(),
    db.insert(flows).values({ businessId, name: 'welcome' }).returning(),
    db.insert(memoryDocuments).values({ businessId, title: 'Refunds', content: 'Refunds within 30 days.' }).returning(),
    (await testEventsDatabase()).db
      .insert(analyticsErasures)
      .values({ businessId, status: 'done', requestedBy: 'admin', completedAt: new Date() })
      .returning(),
  ])
  const [[run]] = await Promise.all([
    db.insert(flowRuns).values({ flowId: flow!.id, businessId, keyId: owner.record.id }).returning(),
    db.insert(audienceListMembers).values({ listId: list!.id, personId: person!.id }),
    db.insert(blogPostTags).values({ businessId, blogId: blog!.id, tagId: tag!.id, position: 0 }),
  ])
  return {
    service,
    businessId,
    ownerKeyId: owner.record.id,
    personId: person!.id,
    personEmail,
    companyId: company!.id,
    listSlug: list!.slug,
    authorId: author!.id,
    tagId: tag!.id,
    blogId: blog!.id,
    flowId: flow!.id,
    runId: run!.id,
    documentId: document!.id,
    erasureId: erasure!.id,
  }
}

export interface ValidRequest {
  /** The concrete path, ids from the world filled in; a query string may follow. */
  path: string
  body?: unknown
  headers?: Record<string, string>
}

export interface RouteEntry {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  /** The path as the app declares it (`/api/v0/memory/:id`). */
  route: string
  /** The scope it needs; null: any valid key. */
  scope: Scope | null
  /** Whether public keys may call it (docs/api.md, "Endpoints and scopes"). */
  public: boolean
  /** The answer to `request` from a key holding `scope`. */
  status: number
  request: (w: World) => ValidRequest
}

export const ROUTE_TABLE: readonly RouteEntry[] = [
  { method: 'GET', route: '/api/v0/whoami', scope: null, public: true, status: 200, request: () => ({ path: '/api/v0/whoami' }) },

  // Analytics
  {
    method: 'POST',
    route: '/api/v0/analytics',
    scope: 'ANALYTICS_WRITE',
    public: true,
    status: 202,
    request: () => ({ path: '/api/v0/analytics', body: { eventType: 'page_view', url: 'https://www.example.com/' } }),
  },
  {
    method: 'GET',
    route: '/api/v0/analytics',
    scope: 'ANALYTICS_READ',
    public: false,
    status: 200,
    request: () => ({ path: '/api/v0/analytics?type=page_view&limit=10' }),
  },
  {
    method: 'POST',
    route: '/api/v0/analytics/erasures',
    scope: 'ANALYTICS_WRITE',
    public: false,
    status: 202,
    request: () => ({ path: '/api/v0/analytics/erasures', body: { personId: 'u1' } }),
  },
  {
    method: 'GET',
    route: '/api/v0/analytics/erasures/:id',
    scope: 'ANALYTICS_WRITE',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/analytics/erasures/${w.erasureId}` }),
  },

  // Audience: people
  {
    method: 'POST',
    route: '/api/v0/audience/people',
    scope: 'AUDIENCE_PERSON_WRITE',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/audience/people', body: { email: 'new@example.com', firstName: 'Grace' } }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/people',
    scope: 'AUDIENCE_PERSON_READ',
    public: false,
    status: 200,
    request: () => ({ path: '/api/v0/audience/people?limit=10' }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/people/:id',
    scope: 'AUDIENCE_PERSON_READ',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/audience/people/${w.personId}` }),
  },
  {
    method: 'DELETE',
    route: '/api/v0/audience/people/:id',
    scope: 'AUDIENCE_PERSON_WRITE',
    public: false,
    status: 204,
    request: (w) => ({ path: `/api/v0/audience/people/${w.personId}` }),
  },

  // Audience: companies
  {
    method: 'POST',
    route: '/api/v0/audience/companies',
    scope: 'AUDIENCE_COMPANY_WRITE',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/audience/companies', body: { domain: 'new.example', name: 'New' } }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/companies',
    scope: 'AUDIENCE_COMPANY_READ',
    public: false,
    status: 200,
    request: () => ({ path: '/api/v0/audience/companies?limit=10' }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/companies/:id',
    scope: 'AUDIENCE_COMPANY_READ',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/audience/companies/${w.companyId}` }),
  },

  // Audience: lists
  {
    method: 'POST',
    route: '/api/v0/audience/lists',
    scope: 'AUDIENCE_LIST_WRITE',
    public: false,
    status: 201,
    request: () => ({ path: '/api/v0/audience/lists', body: { slug: 'vip', name: 'VIP' } }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/lists',
    scope: 'AUDIENCE_LIST_READ',
    public: false,
    status: 200,
    request: () => ({ path: '/api/v0/audience/lists' }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/lists/:slug',
    scope: 'AUDIENCE_LIST_READ',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/audience/lists/${w.listSlug}` }),
  },
  {
    method: 'GET',
    route: '/api/v0/audience/lists/:slug/people',
    scope: 'AUDIENCE_LIST_READ',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/audience/lists/${w.listSlug}/people` }),
  },
  {
    method: 'POST',
    route: '/api/v0/audience/lists/:slug/people',
    scope: 'AUDIENCE_LIST_WRITE',
    public: true,
    status: 200,
    request: (w) => ({ path: `/api/v0/audience/lists/${w.listSlug}/people`, body: { people: [{ email: 'new@example.com' }] } }),
  },
  {
    method: 'DELETE',
    route: '/api/v0/audience/lists/:slug/people',
    scope: 'AUDIENCE_LIST_WRITE',
    public: true,
    status: 200,
    request: (w) => ({ path: `/api/v0/audience/lists/${w.listSlug}/people`, body: { people: [{ email: w.personEmail }] } }),
  },

  // Blog: posts
  {
    method: 'GET',
    route: '/api/v0/blog/blogs',
    scope: 'BLOG_READ',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/blog/blogs?tag=news' }),
  },
  {
    method: 'GET',
    route: '/api/v0/blog/blogs/:id',
    scope: 'BLOG_READ',
    public: true,
    status: 200,
    request: (w) => ({ path: `/api/v0/blog/blogs/${w.blogId}` }),
  },
  {
    method: 'POST',
    route: '/api/v0/blog/blogs',
    scope: 'BLOG_WRITE',
    public: false,
    status: 201,
    request: (w) => ({
      path: '/api/v0/blog/blogs',
      body: { slug: 'new', title: 'New', content: 'x', authorId: w.authorId, tags: ['news'] },
    }),
  },
  {
    method: 'PATCH',
    route: '/api/v0/blog/blogs/:id',
    scope: 'BLOG_WRITE',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/blog/blogs/${w.blogId}`, body: { title: 'Changed' } }),
  },
  {
    method: 'DELETE',
    route: '/api/v0/blog/blogs/:id',
    scope: 'BLOG_WRITE',
    public: false,
    status: 204,
    request: (w) => ({ path: `/api/v0/blog/blogs/${w.blogId}` }),
  },

  // Blog: authors
  {
    method: 'GET',
    route: '/api/v0/blog/authors',
    scope: 'BLOG_READ',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/blog/authors' }),
  },
  {
    method: 'GET',
    route: '/api/v0/blog/authors/:id',
    scope: 'BLOG_READ',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/blog/authors/ada' }),
  },
  {
    method: 'POST',
    route: '/api/v0/blog/authors',
    scope: 'BLOG_WRITE',
    public: false,
    status: 201,
    request: () => ({ path: '/api/v0/blog/authors', body: { slug: 'bob', name: 'Bob' } }),
  },
  {
    method: 'PATCH',
    route: '/api/v0/blog/authors/:id',
    scope: 'BLOG_WRITE',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/blog/authors/${w.authorId}`, body: { name: 'Ada L' } }),
  },
  {
    method: 'DELETE',
    route: '/api/v0/blog/authors/:id',
    scope: 'BLOG_WRITE',
    public: false,
    status: 204,
    request: (w) => ({ path: `/api/v0/blog/authors/${w.authorId}` }),
  },

  // Blog: tags
  {
    method: 'GET',
    route: '/api/v0/blog/tags',
    scope: 'BLOG_READ',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/blog/tags' }),
  },
  {
    method: 'GET',
    route: '/api/v0/blog/tags/:id',
    scope: 'BLOG_READ',
    public: true,
    status: 200,
    request: () => ({ path: '/api/v0/blog/tags/news' }),
  },
  {
    method: 'POST',
    route: '/api/v0/blog/tags',
    scope: 'BLOG_WRITE',
    public: false,
    status: 201,
    request: () => ({ path: '/api/v0/blog/tags', body: { slug: 'go', name: 'Go' } }),
  },
  {
    method: 'PATCH',
    route: '/api/v0/blog/tags/:id',
    scope: 'BLOG_WRITE',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/blog/tags/${w.tagId}`, body: { name: 'Newsroom' } }),
  },
  {
    method: 'DELETE',
    route: '/api/v0/blog/tags/:id',
    scope: 'BLOG_WRITE',
    public: false,
    status: 204,
    request: (w) => ({ path: `/api/v0/blog/tags/${w.tagId}` }),
  },

  // Flows
  {
    method: 'POST',
    route: '/api/v0/flow/:id/trigger',
    scope: 'FLOW_TRIGGER',
    public: true,
    status: 202,
    request: (w) => ({
      path: `/api/v0/flow/${w.flowId}/trigger`,
      body: { input: { plan: 'pro' } },
      headers: { 'idempotency-key': 'signup-1' },
    }),
  },
  {
    method: 'GET',
    route: '/api/v0/flow/:id/runs/:runId',
    scope: 'FLOW_TRIGGER',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/flow/${w.flowId}/runs/${w.runId}` }),
  },

  // Memory
  {
    method: 'POST',
    route: '/api/v0/memory',
    scope: 'MEMORY_WRITE',
    public: false,
    status: 201,
    request: () => ({ path: '/api/v0/memory', body: { title: 'Shipping', content: 'Ships in 2 days.' } }),
  },
  {
    method: 'GET',
    route: '/api/v0/memory',
    scope: 'MEMORY_READ',
    public: false,
    status: 200,
    request: () => ({ path: '/api/v0/memory?q=refund' }),
  },
  {
    method: 'GET',
    route: '/api/v0/memory/:id',
    scope: 'MEMORY_READ',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/memory/${w.documentId}` }),
  },
  {
    method: 'PATCH',
    route: '/api/v0/memory/:id',
    scope: 'MEMORY_WRITE',
    public: false,
    status: 200,
    request: (w) => ({ path: `/api/v0/memory/${w.documentId}`, body: { content: 'Refunds within 60 days.' } }),
  },
  {
    method: 'DELETE',
    route: '/api/v0/memory/:id',
    scope: 'MEMORY_WRITE',
    public: false,
    status: 204,
    request: (w) => ({ path: `/api/v0/memory/${w.documentId}` }),
  },
]

/** `METHOD /declared/path`, the name a route goes by in test titles and failure lists. */
export const routeName = (route: { method: string; route: string }) => `${route.method} ${route.route}`

/** The table's entries whose declared path starts with `prefix`. */
export const routesUnder = (prefix: string) => ROUTE_TABLE.filter((entry) => entry.route.startsWith(prefix))

/** The /api/v0 routes the app declares (OPTIONS, the CORS preflight, aside), with their access rule and query parameters. */
export function declaredApiRoutes(app: Service['app']) {
  return app.routes
    .filter((r) => r.path.startsWith('/api/v0/') && r.method !== 'OPTIONS')
    .map((r) => ({
      method: r.method,
      route: r.path,
      access: (r.hooks.detail as { 'x-access'?: RouteAccess } | undefined)?.['x-access'],
      queryNames: Object.keys((r.hooks.query as { properties?: object } | undefined)?.properties ?? {}),
    }))
}
