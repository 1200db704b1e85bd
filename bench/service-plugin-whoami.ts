/**
 * The service as src/index.ts starts it, with one route more: GET /api/v0/whoami-through-plugin,
 * whoami's answer through the key chain's Elysia plugin (src/http/key-chain-plugin.ts) and
 * the app's global hooks instead of the direct route. `npm run bench` compares the two in one
 * run: the direct route stays while the plugin is more than 5% slower (docs/architecture.md,
 * "The hot routes"). Not for anything but benchmarks.
 */
import { Elysia } from 'elysia'
import { clientContext } from '../src/areas/whoami/index.ts'
import { startBenchService } from './service-start.ts'

await startBenchService('whoami through the plugin too', {}, (service) =>
  service.app.use(
    new Elysia({ name: 'bench/whoami-through-plugin' })
      .use(service.services.keyChain)
      .get('/api/v0/whoami-through-plugin', ({ grant }) => clientContext(grant.key, grant.origin), {
        access: { scope: null, public: true },
      }),
  ),
)
