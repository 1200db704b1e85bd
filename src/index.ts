import { openDatabase, type Database } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import type { Service } from './app.ts'
import { loadConfig, STOP_TIMEOUT_MS } from './config.ts'
import { SERVER_OPTIONS } from './http/server-options.ts'
import { createLogger, errorFields, flushLog, lineLogger } from './observability/log.ts'
import { adminTokenLine, resolveAdminToken, type AdminToken } from './process/admin-token.ts'
import { lockDataDir } from './process/data-dir-lock.ts'
import { firstStartNotice } from './process/first-start.ts'

// config -> database -> migrations -> app -> listen; stop gracefully on SIGTERM/SIGINT.
// The signal handlers come first: a stop during a slow start closes what was opened.
let database: Database | undefined
/** EVENTS_DATABASE_URL's database, when the event store has one of its own. */
let eventsDatabase: Database | undefined
let service: Service | undefined
let stopping = false
// JSON until the configuration says otherwise (a bad configuration is reported as JSON too).
let logger = createLogger()
let releaseDataDir: (() => void) | undefined

async function stop(signal: string) {
  if (stopping) return
  stopping = true
  logger.info(`${signal}: finishing in-flight requests`)
  const overdue = setTimeout(() => {
    logger.error(`${signal}: not stopped within ${STOP_TIMEOUT_MS} ms; exiting without waiting further`)
    flushLog()
    process.exit(1)
  }, STOP_TIMEOUT_MS)
  let code = 0
  try {
    await service?.app.server?.stop(false)
    await service?.drain()
  } catch (error) {
    // Still close and exit: a stop that throws must not leave the process running.
    logger.error(`${signal}: draining failed`, errorFields(error))
    code = 1
  }
  for (const opened of [database, eventsDatabase]) {
    await opened?.close().catch((error: unknown) => logger.warn(`${signal}: closing a database failed`, errorFields(error)))
  }
  clearTimeout(overdue)
  logger.info(`${signal}: stopped`)
  flushLog()
  process.exit(code)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))
// However the process ends (short of kill -9, which leaves a lock the next start takes over).
process.on('exit', () => releaseDataDir?.())

/** Start-up refusals (directory or port taken, missing ADMIN_TOKEN): one line, exit 1. */
function refuse(message: string): never {
  logger.error(`keygate cannot start: ${message}`)
  flushLog()
  process.exit(1)
}

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (error) {
  refuse((error as Error).message)
}
logger = createLogger({ format: config.logFormat })
// Before anything reads the directory: a second process must never touch the database.
if (!config.databaseUrl) {
  try {
    releaseDataDir = lockDataDir(config.dataDir)
  } catch (error) {
    refuse((error as Error).message)
  }
}
let adminToken: AdminToken
try {
  adminToken = resolveAdminToken(config)
} catch (error) {
  refuse((error as Error).message)
}
// The app's modules load while the database opens (the embedded engine compiles its
// WebAssembly off this thread): bench/README.md, "Start-up time".
const [opened, openedEvents, { createApp }, { bootstrapFirstOwner }] = await Promise.all([
  openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }),
  config.eventsDatabaseUrl ? openDatabase({ databaseUrl: config.eventsDatabaseUrl, dataDir: config.dataDir }) : undefined,
  import('./app.ts'),
  import('./dashboard/bootstrap.ts'),
])
database = opened
eventsDatabase = openedEvents
await migrate(database, eventsDatabase)
service = createApp({
  database,
  eventsDatabase,
  adminToken: adminToken.token,
  rateLimits: config.rateLimits,
  trustProxy: config.trustProxy,
  redisUrl: config.redisUrl,
  ingestQueueRows: config.ingestQueueRows,
  eventRetentionDays: config.eventRetentionDays,
  // Partitions ahead and retention: now, in the background, and hourly (src/events/maintenance.ts).
  eventMaintenance: true,
  leaks: { policy: config.leakedKeyPolicy, publicKeysFile: config.secretScanningPublicKeys },
  webhooks: { allowedHosts: config.webhookAllowedHosts },
  logger,
  logRequests: config.logRequests,
  keyChanges: true,
})
if (!stopping) {
  try {
    service.app.listen({ port: config.port, ...SERVER_OPTIONS })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
    await Promise.all([database.close(), eventsDatabase?.close()])
    refuse(`port ${config.port} is already in use; stop what listens there or set PORT`)
  }
  const port = service.app.server!.port
  const where = config.databaseUrl
    ? `PostgreSQL (DATABASE_URL${config.eventsDatabaseUrl ? '; events on EVENTS_DATABASE_URL' : ''})`
    : `embedded PGlite in ${config.dataDir}`
  logger.info(`keygate listening on http://localhost:${port} with ${where}`)
  // Every start says which token is in effect; only the start that generated it prints it.
  logger.info(adminTokenLine(adminToken))
  // An empty database gets a first business and owner, with a one-time sign-in link printed once.
  const firstOwner = await bootstrapFirstOwner(database.db, { baseUrl: `http://localhost:${port}`, log: lineLogger(logger, 'info') })
  // The same secrets for people, each on a line of its own, apart from the log's format.
  const notice = firstStartNotice({
    adminToken: adminToken.source === 'generated' ? { token: adminToken.token, file: adminToken.file! } : undefined,
    signIn: firstOwner ?? undefined,
    serviceUrl: `http://localhost:${port}`,
  })
  if (notice !== null) process.stderr.write(notice)
}
