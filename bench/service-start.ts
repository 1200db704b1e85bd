/**
 * The service as src/index.ts starts it, for the bench variants that change one thing
 * (bench/service-without-store.ts, bench/service-plugin-whoami.ts): opens DATABASE_URL,
 * migrates, builds the app with `options` over the environment's configuration, lets
 * `extend` add to it, listens on PORT and stops on SIGTERM. Not for anything but benchmarks.
 *
 * BENCH_QUERY_TIMEOUT_MS: the statement deadline (default the service's 4 s). Under valgrind
 * a JIT compile can hold the event loop for seconds, which a deadline timer would take for
 * a hung database.
 */
import { openDatabase } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { createApp, type AppOptions, type Service } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { SERVER_OPTIONS } from '../src/http/server-options.ts'
import { createLogger } from '../src/observability/log.ts'

export async function startBenchService(what: string, options: Partial<AppOptions>, extend?: (service: Service) => void): Promise<void> {
  const config = loadConfig()
  if (!config.databaseUrl || !process.env.ADMIN_TOKEN) throw new Error('set DATABASE_URL and ADMIN_TOKEN (bench/support.ts does)')
  const queryTimeoutMs = process.env.BENCH_QUERY_TIMEOUT_MS ? Number(process.env.BENCH_QUERY_TIMEOUT_MS) : undefined
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, queryTimeoutMs })
  await migrate(database)
  const service = createApp({
    database,
    adminToken: process.env.ADMIN_TOKEN,
    rateLimits: config.rateLimits,
    trustProxy: config.trustProxy,
    logger: createLogger({ format: config.logFormat }),
    keyChanges: true,
    ...options,
  })
  extend?.(service)
  service.app.listen({ port: config.port, ...SERVER_OPTIONS })
  console.log(`keygate (${what}) listening on http://localhost:${service.app.server!.port}`)
  process.on('SIGTERM', async () => {
    await service.app.server?.stop(false)
    await service.drain()
    await database.close()
    process.exit(0)
  })
}
