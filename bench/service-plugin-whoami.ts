/**
 * The service as src/index.ts starts it, with one route more: GET /api/v0/whoami-through-plugin,
 * whoami's answer through the key chain's Elysia plugin (src/http/key-chain-plugin.ts) and
 * the app's global hooks instead of the direct route. `npm run bench` compares the two in one
 * run: the direct route stays while the plugin is more than 5% slower (docs/architecture.md,
 * "The hot routes"). Not for anything but benchmarks.
 */
import { Elysia } from 'elysia'
import { openDatabase } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { createApp } from '../src/app.ts'
import { clientContext } from '../src/areas/whoami/index.ts'
import { loadConfig } from '../src/config.ts'
import { SERVER_OPTIONS } from '../src/http/server-options.ts'
import { createLogger } from '../src/observability/log.ts'

const config = loadConfig()
if (!config.databaseUrl || !process.env.ADMIN_TOKEN) throw new Error('set DATABASE_URL and ADMIN_TOKEN (bench/support.ts does)')
const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
await migrate(database)
const service = createApp({
  database,
  adminToken: process.env.ADMIN_TOKEN,
  rateLimits: config.rateLimits,
  trustProxy: config.trustProxy,
  logger: createLogger({ format: config.logFormat }),
  keyChanges: true,
})
service.app.use(
  new Elysia({ name: 'bench/whoami-through-plugin' })
    .use(service.services.keyChain)
    .get('/api/v0/whoami-through-plugin', ({ grant }) => clientContext(grant.key, grant.origin), {
      access: { scope: null, public: true },
    }),
)
service.app.listen({ port: config.port, ...SERVER_OPTIONS })
console.log(`keygate (whoami through the plugin too) listening on http://localhost:${service.app.server!.port}`)
process.on('SIGTERM', async () => {
  await service.app.server?.stop(false)
  await service.drain()
  await database.close()
  process.exit(0)
})
