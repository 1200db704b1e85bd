import { Elysia } from 'elysia'
import type { Database } from '../db/client.ts'
import { isDatabaseUnavailable } from '../db/faults.ts'
import { createKeyStore, type KeyStoreOptions } from './access/key-store.ts'
import { createLastUsedRecorder, type LastUsedOptions } from './access/last-used.ts'
import { createUsageRecorder, type UsageRecorderOptions } from './usage/recorder.ts'
import { createKeyChainPlugin } from './http/key-chain-plugin.ts'
import { createBrowserUseAudit } from './leaks/browser-use.ts'
import { createSecretScanningKeys } from './leaks/github-keys.ts'
import { createLeakResponder, type LeakPolicy } from './leaks/respond.ts'
import { leakRoutes } from './leaks/routes.ts'
import { writeExpiryNotices } from './keys/expiry-notices.ts'
import { createWebhookDelivery } from './webhooks/delivery.ts'
import { pruneWebhookHistory } from './webhooks/pruning.ts'
import { createWebhookEndpoints } from './webhooks/endpoints.ts'
import { createUrlGuard, type Resolve } from './webhooks/url-guard.ts'
import { createGate } from './access/gate.ts'
import { adminRoutes } from './admin/index.ts'
import { DASHBOARD_PREFIX, dashboardFailurePage, dashboardRoutes } from './dashboard/index.ts'
import type { SignInLimits } from './dashboard/throttle.ts'
import { sdkRoutes } from './http/sdk-route.ts'
import { apiAreas, hotAreas } from './areas/index.ts'
import type { AreaDeps } from './areas/deps.ts'
import type { EventRow } from './events/write.ts'
import { preflight } from './http/cors.ts'
import { createDirectRoutes } from './http/direct-route.ts'
import { createMethodTable } from './http/routes.ts'
import { errorHandling } from './http/errors.ts'
import { healthRoutes } from './http/health.ts'
import { homeRoutes } from './http/home.ts'
import { apiReference } from './http/openapi.ts'
import { createRequestContext } from './http/request-context.ts'
import { createKeyService } from './keys/service.ts'
import { createClientAddressOf, type ClientAddressOf } from './shared/client-address.ts'
import { createFailureBudget } from './access/rate-limit/failure-budget.ts'
import { createRateLimiter } from './access/rate-limit/limiter.ts'
import { createAdminGuard } from './http/admin-guard.ts'
import { createErasures, type ErasureOptions } from './events/erasure.ts'
import { scheduleEventMaintenance } from './events/maintenance.ts'
import { createScheduler, type Timers } from './background/scheduler.ts'
import { createRetention } from './events/retention.ts'
import {
  DEFAULT_EVENT_RETENTION_DAYS,
  DEFAULT_INGEST_QUEUE_ROWS,
  DEFAULT_RATE_LIMITS,
  POSTGRES_INSERTS_IN_FLIGHT,
  type Config,
} from './config.ts'
import { feedKeyChanges, type KeyChangeFeedOptions } from './access/key-invalidation.ts'
import { createLogger, errorFields, lineLogger, type Logger } from './observability/log.ts'
import { createMetrics, type Metrics } from './observability/metrics.ts'
import { metricsRoute, requestObservation } from './http/observation.ts'
import { argon2idPasswords, type PasswordCost, type Passwords } from './members/passwords.ts'

export interface AppOptions {
  /** The service's database: keys, businesses, members, audience, blog, flows, memory, audit, webhooks. */
  database: Database
  /**
   * EVENTS_DATABASE_URL's: the event store (events, their id claims, erasure requests) on a
   * PostgreSQL of its own (docs/scaling.md, "A database for events"); `database` when absent.
   */
  eventsDatabase?: Database
  adminToken: string
  keyCache?: KeyStoreOptions
  /** Clock for the key chain (expiry, lastUsedAt); tests move it. */
  now?: () => number
  /** The budgets (docs/api.md, "Rate limits"); its defaults when absent. */
  rateLimits?: Config['rateLimits']
  /** TRUST_PROXY: proxies whose X-Forwarded-For is believed; none when absent. */
  trustProxy?: readonly string[]
  /** REDIS_URL: instances share rate-limit counters; each counts alone when absent. */
  redisUrl?: string
  /**
   * Where accepted events are written: the analytics_events table by default.
   * bench/service-without-store.ts replaces it to measure the request path alone.
   */
  eventStore?: (rows: readonly EventRow[]) => Promise<void>
  /** EVENT_RETENTION_DAYS: the longest any business keeps events (default 400). */
  eventRetentionDays?: number
  /** The erasure worker's batches, pauses and retries (tests shorten them). */
  erasure?: ErasureOptions
  /**
   * Run the event maintenance on the scheduler (partitions ahead, retention, pruning): at
   * once and hourly, one instance at a time. src/index.ts turns it on; tests run it by hand.
   */
  eventMaintenance?: boolean
  /** The background scheduler's clock and timers (tests move them). */
  timers?: Timers
  /** INGEST_QUEUE_ROWS: most event rows waiting to commit before 503 (default 20000). */
  ingestQueueRows?: number
  /** The rate limits' clock, in ms (monotonic by default; tests move it). */
  limitClock?: () => number
  /** Replaces the TRUST_PROXY rule (tests stand for a proxy in front of `app.handle`). */
  clientAddress?: ClientAddressOf
  /** Where log lines go; JSON on stdout by default. */
  logger?: Logger
  /** The usage recorder's flush interval, bounds and retries (tests shorten them). */
  usage?: Pick<UsageRecorderOptions, 'flushIntervalMs' | 'maxEntries' | 'maxRefusals' | 'retry'>
  /** The lastUsedAt recorder's flush interval and retries (tests shorten them). */
  lastUsed?: Pick<LastUsedOptions, 'flushIntervalMs' | 'retry'>
  /** Sign-in throttling's limits; src/dashboard/throttle.ts's defaults when absent (tests lower them). */
  signInLimits?: SignInLimits
  /** One log line per request (LOG_REQUESTS=1). */
  logRequests?: boolean
  /** Counters behind GET /metrics; a fresh set by default. */
  metrics?: Metrics
  /**
   * Follow key changes made by other instances (LISTEN/NOTIFY on PostgreSQL), so cached
   * keys can be trusted for the long TTL. Off by default (tests with one app): keys are
   * then re-read after the short fallback TTL. src/index.ts turns it on.
   */
  keyChanges?: boolean | KeyChangeFeedOptions
  /** argon2id's cost for members' passwords; Bun's defaults when absent (the tests lower it). */
  passwordCost?: PasswordCost
  /** Hashes and checks members' passwords in place of argon2id at `passwordCost` (tests count and hold the checks). */
  passwords?: Passwords
  /**
   * Leaked keys (docs/api.md, "When a key leaks"): what is done to a live private key
   * reported (LEAKED_KEY_POLICY; default revoke), and where GitHub's signing keys come from
   * (SECRET_SCANNING_PUBLIC_KEYS' file; else fetched from `publicKeysUrl`, GitHub's by default).
   */
  leaks?: { policy?: LeakPolicy; publicKeysFile?: string; publicKeysUrl?: string }
  /**
   * Webhooks (docs/webhooks.md): the hosts they may reach whatever they resolve to
   * (WEBHOOK_ALLOWED_HOSTS), and for tests, the resolver, the retry waits, the receiver's
   * timeout, how often deliveries are looked for (1 s) and when a failing endpoint is disabled.
   */
  webhooks?: {
    allowedHosts?: readonly string[]
    resolve?: Resolve
    retryDelaysMs?: readonly number[]
    timeoutMs?: number
    everyMs?: number
    disableAfterMs?: number
  }
}

/**
 * Builds the whole service without listening: src/index.ts serves it, tests call
 * `app.handle()`. Errors render in one place; API routes carry the access chain.
 */
export function createApp(options: AppOptions) {
  const { db } = options.database
  const events = options.eventsDatabase ?? options.database
  const eventsApart = events !== options.database
  const logger = options.logger ?? createLogger()
  const metrics = options.metrics ?? createMetrics()
  const scheduler = createScheduler({
    database: options.database,
    timers: options.timers,
    // A database outage is logged once, as a state change (watchDatabaseInLog); the runs are retried silently.
    onError: (job, error) => {
      if (!isDatabaseUnavailable(error)) logger.error(`${job} failed; tried again later`, errorFields(error))
    },
  })
  const retention = createRetention(db, options.eventRetentionDays ?? DEFAULT_EVENT_RETENTION_DAYS)
  // A key's load reads its business's retention in the same query (one round trip, not two).
  const keyStore = createKeyStore(db, { beforeBusinessRead: retention.beforeOutsideRead, ...options.keyCache })
  metrics.readKeyCache(() => keyStore.stats)
  const keyFeed = options.keyChanges
    ? feedKeyChanges(options.database, keyStore, logger, options.keyChanges === true ? {} : options.keyChanges)
    : null
  watchDatabaseInLog(options.database, logger, 'database')
  if (eventsApart) watchDatabaseInLog(events, logger, 'events database')
  // Background records write through their own small pool, and never decide availability.
  const { background } = options.database
  const dropped = (what: string) => (rows: number, e: unknown) =>
    logger.warn(`${what} dropped after their last retry; further drops are counted in keygate_background_rows_dropped_total`, {
      rows,
      ...errorFields(e),
    })
  const lastUsed = createLastUsedRecorder(background, {
    // A database outage is logged once, as a state change; the writes are retried silently.
    onError: (e) => {
      if (!isDatabaseUnavailable(e)) logger.error('lastUsedAt write failed', errorFields(e))
    },
    onDrop: dropped('lastUsedAt writes'),
    ...options.lastUsed,
  })
  const usage = createUsageRecorder(background, {
    onError: (e) => {
      if (!isDatabaseUnavailable(e)) logger.error('usage write failed', errorFields(e))
    },
    onDrop: dropped('usage counts'),
    ...options.usage,
  })
  scheduler.schedule('lastUsedAt writes', lastUsed.intervalMs, () => lastUsed.flushDue())
  scheduler.schedule('usage writes', usage.intervalMs, () => usage.flushDue(), { firstRunInMs: usage.intervalMs })
  metrics.readBackgroundWrites(() => ({ usage: usage.stats.writes, last_used: lastUsed.stats }))
  const keys = createKeyService(db, (hash) => keyStore.invalidate(hash))
  // Erasures left pending by an earlier run (or another instance that stopped) go on at once.
  const erasures = createErasures({ events, service: background }, scheduler, options.erasure)
  const eventRetentionDays = options.eventRetentionDays ?? DEFAULT_EVENT_RETENTION_DAYS
  if (options.eventMaintenance) {
    scheduleEventMaintenance(scheduler, events, {
      serviceDb: background,
      retentionDays: eventRetentionDays,
      onError: (step, error) => logger.warn(`event maintenance (${step}) failed; the next run tries again`, errorFields(error)),
    })
  }
  const urlGuard = createUrlGuard({ allowedHosts: options.webhooks?.allowedHosts ?? [], resolve: options.webhooks?.resolve })
  const webhooks = createWebhookEndpoints(db, urlGuard)
  // Off the request path, on the background pool: a slow delivery round never holds a request's connection.
  const webhookDelivery = createWebhookDelivery(background, { guard: urlGuard, ...options.webhooks })
  scheduler.schedule('webhook deliveries', options.webhooks?.everyMs ?? 1_000, async () => void (await webhookDelivery.run()))
  scheduler.schedule('webhook history pruning', 3_600_000, async ({ db }) => void (await pruneWebhookHistory(db)), {
    exclusive: true,
    firstRunInMs: 60_000,
  })
  // A start waits a minute before the first round: nothing is so close to expiring that it cannot.
  scheduler.schedule('key expiry notices', 600_000, async ({ db }) => void (await writeExpiryNotices(db)), {
    exclusive: true,
    firstRunInMs: 60_000,
  })
  const budgets = options.rateLimits ?? DEFAULT_RATE_LIMITS
  const clientAddress = options.clientAddress ?? createClientAddressOf(options.trustProxy ?? [])
  const limiter = createRateLimiter({ redisUrl: options.redisUrl, log: lineLogger(logger, 'warn') })
  const browserUse = createBrowserUseAudit(background)
  scheduler.schedule('browser-use audits', browserUse.intervalMs, () => browserUse.flush(), { firstRunInMs: browserUse.intervalMs })
  const gate = createGate({
    keys: keyStore,
    lastUsed,
    now: options.now,
    rateLimits: {
      limiter,
      defaults: { public: budgets.public, private: budgets.private },
      authFailures: createFailureBudget(budgets.apiAuthFailures),
      onLimited: (keyType) => metrics.rateLimited(keyType),
      clock: options.limitClock,
    },
    onRefusal: (code) => metrics.authRefused(code),
    usage,
    onBrowserUse: browserUse.note,
  })
  const requestContext = createRequestContext()
  const keyChain = createKeyChainPlugin(gate, clientAddress, requestContext)
  const requireAdmin = createAdminGuard(options.adminToken, {
    failures: createFailureBudget(budgets.adminAuthFailures),
    clientAddress,
    clock: options.limitClock,
  })
  const observation = requestObservation({
    metrics,
    logger,
    logRequests: options.logRequests ?? false,
    clientAddress,
    keyIdOf: keyChain.keyIdOf,
  })
  const direct = createDirectRoutes({ gate, requestContext, logger, observe: observation.record, clientAddressOf: clientAddress })
  const shutdownTasks: (() => Promise<void>)[] = []
  const area: AreaDeps = {
    db,
    events: events.db,
    keyChain: keyChain.plugin,
    direct,
    retention,
    erasures,
    onShutdown: (task) => void shutdownTasks.push(task),
    reportIngest: (source) => metrics.readIngest(source),
    ingest: {
      maxQueuedRows: options.ingestQueueRows ?? DEFAULT_INGEST_QUEUE_ROWS,
      // PGlite has one connection: a second insert would only wait behind the first.
      concurrency: events.engine === 'postgres' ? POSTGRES_INSERTS_IN_FLIGHT : 1,
      store: options.eventStore,
      copyIn: events.copyIn,
    },
  }

  // The preflight and the 405 answer name each path's methods: they read the app's route
  // list when a request asks, by then final (`app` is declared below; no request comes before).
  const methodsOf = createMethodTable(() => app.routes)
  // Everything outside /api/v0 gets its request id from one local hook; API routes stamp
  // theirs in the access chain's first hook.
  const passwords = options.passwords ?? argon2idPasswords(options.passwordCost)
  const surfaces = new Elysia({ name: 'surfaces' })
    .onTransform(requestContext.stampRequestId)
    .use(
      healthRoutes(eventsApart ? { database: options.database.ping, 'events database': events.ping } : { database: options.database.ping }),
    )
    .use(homeRoutes())
    .use(metricsRoute({ metrics, requireAdmin }))
    .use(apiReference())
    .use(preflight(methodsOf))
    .use(adminRoutes({ db, keys, requireAdmin, retention, erasures, passwords, webhooks }))
    .use(sdkRoutes())
    .use(
      leakRoutes({
        responder: createLeakResponder(db, { policy: options.leaks?.policy ?? 'revoke', onKeyChange: (hash) => keyStore.invalidate(hash) }),
        keys: createSecretScanningKeys({
          file: options.leaks?.publicKeysFile,
          url: options.leaks?.publicKeysUrl,
          onFetchFailure: (error) =>
            logger.warn("GitHub's secret-scanning keys could not be fetched; the last good copy is used", errorFields(error)),
        }),
        limiter,
        clientAddress,
        clock: options.limitClock,
      }),
    )
    .use(
      dashboardRoutes({
        db,
        events: events.db,
        keys,
        clientAddress,
        signInLimits: options.signInLimits,
        defaultRateLimits: { public: budgets.public, private: budgets.private },
        passwords,
        retention,
        webhooks,
      }),
    )

  // The hot routes are declared first, and come before the global hooks, so none of them
  // runs for those routes; the listening server calls them without Elysia's per-request wrapper.
  const hot = hotAreas(area)
  const app = new Elysia({ serve: { routes: direct.served as never } })
    .use(hot)
    .use(observation.plugin)
    .use(
      errorHandling(logger, methodsOf, {
        pagesPrefix: `${DASHBOARD_PREFIX}/`,
        pageFailure: dashboardFailurePage(db),
        requestContext,
      }),
    )
    .use(surfaces)
    .use(apiAreas(area))

  return {
    app,
    services: {
      keys,
      keyStore,
      lastUsed,
      keyFeed,
      limiter,
      usage,
      direct,
      retention,
      erasures,
      browserUse,
      keyChain: keyChain.plugin,
      webhooks,
      webhookDelivery,
    },
    logger,
    metrics,
    /** Writes what is buffered (events, lastUsedAt); call before closing the database. */
    async drain() {
      // No background run starts after this; those running finish first.
      await Promise.all([scheduler.stop(), erasures.close()])
      await Promise.all(shutdownTasks.map((task) => task()))
      await lastUsed.close()
      await usage.close()
      await keyFeed?.close()
      await limiter.close()
    },
  }
}

export type Service = ReturnType<typeof createApp>

/** One line when a database stops answering, one when it is back; never a statement. */
function watchDatabaseInLog(database: Database, logger: Logger, name: string): void {
  database.availability.onChange((change) => {
    if (change.up) logger.info(`${name} answers again`, { downForMs: change.downForMs })
    else logger.warn(`${name} unavailable: requests that need it answer 503 until it is back`, errorFields(change.error))
  })
}
