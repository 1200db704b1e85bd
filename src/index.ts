import { openDatabase, type Database } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { MAX_BODY_BYTES } from './access/plugin.ts'
import { createApp, type Service } from './app.ts'
import { loadConfig } from './config.ts'
import { bootstrapFirstOwner } from './dashboard/bootstrap.ts'
import { createLogger, flushLog, lineLogger } from './observability/log.ts'

// config -> database -> migrations -> app -> listen; stop gracefully on SIGTERM/SIGINT.
// The signal handlers come first: a stop during a slow start closes what was opened.
let database: Database | undefined
let service: Service | undefined
let stopping = false
// JSON until the configuration says otherwise (a bad configuration is reported as JSON too).
let logger = createLogger()

async function stop(signal: string) {
  if (stopping) return
  stopping = true
  logger.info(`${signal}: finishing in-flight requests`)
  await service?.app.server?.stop(false)
  await service?.drain()
  await database?.close()
  flushLog()
  process.exit(0)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))

const config = loadConfig()
logger = createLogger({ format: config.logFormat })
database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
await migrate(database)
service = createApp({
  database,
  adminToken: config.adminToken,
  rateLimits: config.rateLimits,
  trustProxy: config.trustProxy,
  redisUrl: config.redisUrl,
  ingestQueueRows: config.ingestQueueRows,
  logger,
  logRequests: config.logRequests,
  keyChanges: true,
})
if (!stopping) {
  service.app.listen({
    port: config.port,
    // A little over the API's 1 MiB so that the API, not the socket, answers 413 with a body.
    maxRequestBodySize: MAX_BODY_BYTES + 64 * 1024,
  })
  const port = service.app.server!.port
  const where = config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite in ${config.dataDir}`
  logger.info(`keygate listening on http://localhost:${port} with ${where}`)
  if (config.adminTokenGenerated) {
    // One of the two lines allowed to hold a secret (contract section 13).
    logger.info(`admin token for this run (set ADMIN_TOKEN to choose one): ${config.adminToken}`)
  }
  // An empty database gets a first business and owner, with a one-time sign-in link printed once.
  await bootstrapFirstOwner(database.db, { baseUrl: `http://localhost:${port}`, log: lineLogger(logger, 'info') })
}
