import { t, type Static } from 'elysia'
import { Value } from '@sinclair/typebox/value'
import { parseTrustedProxies } from './shared/client-address.ts'

const BUDGET = '^[0-9]{1,7}/[0-9]{1,5}$'

/** A budget: `<limit>/<seconds>`. */
export interface Budget {
  limit: number
  windowSeconds: number
}

/** The default budgets (docs/api.md, "Rate limits"), and the one place they are written. */
export const DEFAULT_RATE_LIMITS = {
  public: { limit: 300, windowSeconds: 60 },
  private: { limit: 6000, windowSeconds: 60 },
  apiAuthFailures: { limit: 300, windowSeconds: 60 },
  adminAuthFailures: { limit: 30, windowSeconds: 60 },
} as const satisfies Record<string, Budget>

/**
 * A public key's ceiling across all its visitors, as a multiple of its per-visitor budget
 * (the key's `rateLimit`, or RATE_LIMIT_PUBLIC): the default 300/60 a visitor makes
 * 30000/60, 500 requests a second for the whole key. Raising a key's `rateLimit` raises both.
 * Without it, a flood spread over many addresses had the whole service to itself
 * (docs/decisions.md, "Public keys under a flood from many addresses").
 */
export const PUBLIC_KEY_CEILING_VISITORS = 100

/** The budget of a public key's requests from all its visitors together. */
export function publicKeyCeiling(perVisitor: Budget): Budget {
  return { limit: perVisitor.limit * PUBLIC_KEY_CEILING_VISITORS, windowSeconds: perVisitor.windowSeconds }
}

/**
 * Event inserts in flight at once on PostgreSQL: three, since batches go by COPY, whose
 * round trips leave the database idle between batches (docs/decisions.md; with the jsonb
 * insert alone, two beat one and four). PGlite has one connection, so one there.
 */
export const POSTGRES_INSERTS_IN_FLIGHT = 3

/**
 * SIGTERM's drain time: the longest from the signal to the process's exit, whatever the
 * database does meanwhile. In-flight requests end within 5 s (a 503 at worst) and each
 * write of the drain has its statement deadline; this bounds their sum, under the 30 s
 * a container orchestrator gives by default before SIGKILL.
 */
export const STOP_TIMEOUT_MS = 15_000

/** How long events are kept, in days, unless a business keeps them less (EVENT_RETENTION_DAYS). */
export const DEFAULT_EVENT_RETENTION_DAYS = 400

/** Most analytics rows waiting to be committed, by default (INGEST_QUEUE_ROWS). */
export const DEFAULT_INGEST_QUEUE_ROWS = 20_000

const written = (budget: Budget) => `${budget.limit}/${budget.windowSeconds}`

const Environment = t.Object({
  PORT: t.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  DATABASE_URL: t.Optional(t.String({ pattern: '^postgres(ql)?://' })),
  EVENTS_DATABASE_URL: t.Optional(t.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: t.String({ minLength: 1, default: './data' }),
  ADMIN_TOKEN: t.Optional(t.String({ minLength: 16 })),
  REDIS_URL: t.Optional(t.String({ pattern: '^rediss?://' })),
  TRUST_PROXY: t.Optional(t.String({ minLength: 1 })),
  RATE_LIMIT_PUBLIC: t.String({ pattern: BUDGET, default: written(DEFAULT_RATE_LIMITS.public) }),
  RATE_LIMIT_PRIVATE: t.String({ pattern: BUDGET, default: written(DEFAULT_RATE_LIMITS.private) }),
  RATE_LIMIT_API_AUTH_FAILURES: t.String({ pattern: BUDGET, default: written(DEFAULT_RATE_LIMITS.apiAuthFailures) }),
  RATE_LIMIT_ADMIN_AUTH_FAILURES: t.String({ pattern: BUDGET, default: written(DEFAULT_RATE_LIMITS.adminAuthFailures) }),
  INGEST_QUEUE_ROWS: t.Integer({ minimum: 1, maximum: 10_000_000, default: DEFAULT_INGEST_QUEUE_ROWS }),
  // Text, checked by retentionDays: Elysia's t.Integer converts "1.5" to 1 and lets 0 through.
  EVENT_RETENTION_DAYS: t.String({ default: String(DEFAULT_EVENT_RETENTION_DAYS) }),
  LEAKED_KEY_POLICY: t.Union([t.Literal('revoke'), t.Literal('notify')], { default: 'revoke' }),
  SECRET_SCANNING_PUBLIC_KEYS: t.Optional(t.String({ minLength: 1 })),
  WEBHOOK_ALLOWED_HOSTS: t.Optional(t.String({ minLength: 1 })),
  LOG_FORMAT: t.Union([t.Literal('json'), t.Literal('pretty')], { default: 'json' }),
  LOG_REQUESTS: t.Union([t.Literal('0'), t.Literal('1')], { default: '0' }),
})

export interface Config {
  port: number
  databaseUrl: string | undefined
  /** The event store's own PostgreSQL; undefined: the events live beside everything else (docs/scaling.md, "A database for events"). */
  eventsDatabaseUrl: string | undefined
  dataDir: string
  /** ADMIN_TOKEN; undefined: kept in DATA_DIR or refused (src/process/admin-token.ts). */
  adminToken: string | undefined
  /** Shared rate-limit counters; undefined: each instance counts alone. */
  redisUrl: string | undefined
  /** TRUST_PROXY entries as written (addresses or CIDR ranges); empty: trust no proxy. */
  trustProxy: string[]
  rateLimits: {
    public: Budget
    private: Budget
    apiAuthFailures: Budget
    adminAuthFailures: Budget
  }
  /** Most event rows waiting to be committed before POST /api/v0/analytics answers 503. */
  ingestQueueRows: number
  /** EVENT_RETENTION_DAYS: the longest any business's events are kept; a business may keep them less. */
  eventRetentionDays: number
  /** LEAKED_KEY_POLICY: a live private key reported leaked is revoked, or kept working and flagged. */
  leakedKeyPolicy: 'revoke' | 'notify'
  /** SECRET_SCANNING_PUBLIC_KEYS: a file with GitHub's secret-scanning keys; undefined: fetched from GitHub. */
  secretScanningPublicKeys: string | undefined
  /** WEBHOOK_ALLOWED_HOSTS: hosts webhooks may reach whatever they resolve to, over http too (local development). */
  webhookAllowedHosts: string[]
  logFormat: 'json' | 'pretty'
  logRequests: boolean
}

/**
 * Reads the environment once, at start-up. Everything below receives the parsed Config;
 * nothing else reads process.env. Error messages name the variable, never its value
 * (DATABASE_URL, EVENTS_DATABASE_URL and ADMIN_TOKEN are secrets).
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {}
  for (const name of Object.keys(Environment.properties)) {
    const value = env[name]
    if (value !== undefined && value !== '') raw[name] = value
  }
  const parsed = Value.Default(Environment, Value.Convert(Environment, raw))
  if (!Value.Check(Environment, parsed)) {
    const problems = [...Value.Errors(Environment, parsed)].map((e) => `${e.path.slice(1) || 'environment'}: ${e.message}`)
    throw new Error(`invalid configuration: ${problems.join('; ')}`)
  }
  const env_ = parsed as Static<typeof Environment>
  const trustProxy = (env_.TRUST_PROXY ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  parseTrustedProxies(trustProxy) // throws naming a bad entry, at start-up
  if (env_.EVENTS_DATABASE_URL !== undefined && env_.DATABASE_URL === undefined) {
    throw new Error(
      'invalid configuration: EVENTS_DATABASE_URL needs DATABASE_URL (the embedded database keeps the events beside everything else)',
    )
  }
  return {
    port: env_.PORT,
    databaseUrl: env_.DATABASE_URL,
    eventsDatabaseUrl: env_.EVENTS_DATABASE_URL,
    dataDir: env_.DATA_DIR,
    adminToken: env_.ADMIN_TOKEN,
    redisUrl: env_.REDIS_URL,
    trustProxy,
    rateLimits: {
      public: budget(env_.RATE_LIMIT_PUBLIC, 'RATE_LIMIT_PUBLIC'),
      private: budget(env_.RATE_LIMIT_PRIVATE, 'RATE_LIMIT_PRIVATE'),
      apiAuthFailures: budget(env_.RATE_LIMIT_API_AUTH_FAILURES, 'RATE_LIMIT_API_AUTH_FAILURES'),
      adminAuthFailures: budget(env_.RATE_LIMIT_ADMIN_AUTH_FAILURES, 'RATE_LIMIT_ADMIN_AUTH_FAILURES'),
    },
    ingestQueueRows: env_.INGEST_QUEUE_ROWS,
    eventRetentionDays: retentionDays(env_.EVENT_RETENTION_DAYS),
    leakedKeyPolicy: env_.LEAKED_KEY_POLICY,
    secretScanningPublicKeys: env_.SECRET_SCANNING_PUBLIC_KEYS,
    webhookAllowedHosts: (env_.WEBHOOK_ALLOWED_HOSTS ?? '')
      .split(',')
      .map((host) => host.trim())
      .filter((host) => host !== ''),
    logFormat: env_.LOG_FORMAT,
    logRequests: env_.LOG_REQUESTS === '1',
  }
}

/** EVENT_RETENTION_DAYS: a whole number of days, 1 to 36500 (a hundred years). */
function retentionDays(written: string): number {
  const days = /^[0-9]{1,5}$/.test(written) ? Number(written) : Number.NaN
  if (!(days >= 1 && days <= 36_500)) {
    throw new Error('invalid configuration: EVENT_RETENTION_DAYS must be a whole number of days from 1 to 36500, like 400')
  }
  return days
}

/** `<limit>/<seconds>`, each within the contract's range (limit 1..1000000, seconds 1..86400). */
function budget(written: string, variable: string): Budget {
  const [limit, windowSeconds] = written.split('/').map(Number) as [number, number]
  if (limit < 1 || limit > 1_000_000 || windowSeconds < 1 || windowSeconds > 86_400) {
    throw new Error(`invalid configuration: ${variable} must be <limit>/<seconds> with limit 1-1000000 and seconds 1-86400, like "300/60"`)
  }
  return { limit, windowSeconds }
}
