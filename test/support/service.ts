import type { ChangeAuthor } from '../../src/audit/trail.ts'
import { createApp, type AppOptions, type Service } from '../../src/app.ts'
import type { KeyType } from '../../src/access/key-format.ts'
import { businesses } from '../../db/schema/index.ts'
import { createClientAddressRule, type ClientAddressOf } from '../../src/shared/client-address.ts'
import { silentLogger } from '../../src/observability/log.ts'
import type { PasswordCost } from '../../src/members/passwords.ts'
import { registerBackgroundWriter } from './background.ts'
import { testDatabase, testEventsDatabase } from './database.ts'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

/**
 * argon2id at 1 MiB and one pass: 3 ms a hash against 100-400 ms at Bun's defaults, which
 * the dashboard's tests would pay a few times each. Hashing is tested at the defaults in
 * test/unit/passwords.test.ts.
 */
export const TEST_PASSWORD_COST: PasswordCost = { memoryCost: 1024, timeCost: 1 }

/** The author tests give the key service directly (not through a route): the operator. */
export const TEST_AUTHOR: ChangeAuthor = { actor: 'admin' }

const proxyRule = createClientAddressRule(['127.0.0.1'])

/**
 * The client address as a service behind a trusted proxy at 127.0.0.1 sees it (`app.handle`
 * has no socket): the real TRUST_PROXY rule applied to the request's X-Forwarded-For.
 */
export const behindTrustedProxy: ClientAddressOf = (request) => proxyRule('127.0.0.1', request.headers.get('x-forwarded-for'))

/** A service on the run's database, as src/index.ts builds it, minus the listening socket. */
export async function testService(options: Partial<AppOptions> = {}): Promise<Service> {
  const database = await testDatabase()
  const eventsDatabase = await testEventsDatabase()
  const service = createApp({
    database,
    // Apart only when EVENTS_DATABASE_URL says so (CI's pass with the events on their own database).
    eventsDatabase: eventsDatabase === database ? undefined : eventsDatabase,
    adminToken: ADMIN_TOKEN,
    logger: silentLogger,
    passwordCost: TEST_PASSWORD_COST,
    // Erasures finish as soon as their events are deleted: no in-flight batch to wait for here.
    erasure: { settleMs: 0, retryDelayMs: 100 },
    // Webhooks are sent when a test runs the delivery itself (test/api/webhooks.test.ts), not
    // every second by each of the suite's apps.
    webhooks: { everyMs: 3_600_000 },
    ...options,
  })
  registerBackgroundWriter({
    // An accepted erasure deletes in the background: it counts as a write still to finish.
    flushBackground: () =>
      Promise.all([
        service.services.usage.flush(),
        service.services.lastUsed.flush(),
        service.services.erasures.idle(),
        service.services.browserUse.flush(),
      ]),
    stop: () => service.drain(),
  })
  return service
}

/** A business stored directly; `createdAt` for a test that pages by it (two inserts may share a clock tick). */
export async function seedBusiness(_service: Service, name = 'Acme', createdAt?: Date): Promise<string> {
  const db = (await testDatabase()).db
  const [row] = await db.insert(businesses).values({ name, createdAt }).returning()
  return row!.id
}

export interface SeedKeyOptions {
  type?: KeyType
  scopes?: string[]
  allowedOrigins?: string[]
  expiresAt?: string | null
  name?: string
  rateLimit?: { limit: number; windowSeconds: number } | null
}

/** Creates a key through the same service the admin API uses; returns the plaintext too. */
export async function seedKey(service: Service, businessId: string, options: SeedKeyOptions = {}) {
  const type = options.type ?? 'public'
  const created = await service.services.keys.create(
    businessId,
    {
      type,
      name: options.name ?? `${type} key`,
      scopes: options.scopes ?? (type === 'public' ? ['ANALYTICS_WRITE'] : ['ANALYTICS_READ']),
      allowedOrigins: options.allowedOrigins ?? (type === 'public' ? ['example.com'] : []),
      expiresAt: options.expiresAt ?? null,
      rateLimit: options.rateLimit ?? null,
      createdBy: 'test',
    },
    TEST_AUTHOR,
  )
  return { key: created.key, record: created.record }
}

export interface CallOptions {
  method?: string
  key?: string | null
  origin?: string
  body?: unknown
  headers?: Record<string, string>
}

/** Anything with an Elysia app: a Service, or a purpose-built test app. */
export interface Handles {
  app: { handle(request: Request): Promise<Response> }
}

/** One request through `app.handle`, JSON body and bearer key filled in. */
export function call(service: Handles, path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers)
  if (options.key) headers.set('authorization', `Bearer ${options.key}`)
  if (options.origin) headers.set('origin', options.origin)
  let body: string | undefined
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  return service.app.handle(new Request(`http://localhost${path}`, { method: options.method ?? (body ? 'POST' : 'GET'), headers, body }))
}

export function admin(service: Handles, path: string, options: Omit<CallOptions, 'key'> & { token?: string } = {}) {
  return call(service, `/admin/v0${path}`, {
    ...options,
    headers: { authorization: `Bearer ${options.token ?? ADMIN_TOKEN}`, ...options.headers },
  })
}

/** The error envelope's `error`; `field` is there on a 400 about one field. */
export interface ErrorEnvelope {
  code: string
  message: string
  requestId: string
  field?: string
}

export async function errorOf(response: Response): Promise<ErrorEnvelope> {
  const body = (await response.json()) as { error: ErrorEnvelope }
  return body.error
}
