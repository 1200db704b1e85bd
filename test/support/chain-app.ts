import { Elysia, t } from 'elysia'
import { createKeyStore, type KeyStoreOptions } from '../../src/access/key-store.ts'
import { createLastUsedRecorder } from '../../src/access/last-used.ts'
import { createKeyChainPlugin } from '../../src/http/key-chain-plugin.ts'
import { createGate, type RateLimitDeps } from '../../src/access/gate.ts'
import { createClientAddressOf } from '../../src/shared/client-address.ts'
import { createFailureBudget } from '../../src/access/rate-limit/failure-budget.ts'
import { createRateLimiter } from '../../src/access/rate-limit/limiter.ts'
import { DEFAULT_RATE_LIMITS } from '../../src/config.ts'
import { errorHandling } from '../../src/http/errors.ts'
import { createKeyService } from '../../src/keys/service.ts'
import { silentLogger, type Logger } from '../../src/observability/log.ts'
import { testDatabase } from './database.ts'

/**
 * The access chain on a few routes of known rules, so its checks can be tested apart from
 * the areas: a public route, a private one with a body, and one that fails on purpose.
 * `reached` counts handler runs: a refused request must leave it unchanged.
 */
export async function chainApp(
  options: { now?: () => number; keyCache?: KeyStoreOptions; logger?: Logger; rateLimits?: Partial<RateLimitDeps> } = {},
) {
  const { db } = await testDatabase()
  const keyStore = createKeyStore(db, options.keyCache)
  const lastUsed = createLastUsedRecorder(db)
  const keys = createKeyService(db, (hash) => keyStore.invalidate(hash))
  const rateLimits: RateLimitDeps = {
    limiter: createRateLimiter(),
    defaults: { public: DEFAULT_RATE_LIMITS.public, private: DEFAULT_RATE_LIMITS.private },
    authFailures: createFailureBudget(DEFAULT_RATE_LIMITS.apiAuthFailures),
    ...options.rateLimits,
  }
  const keyChain = createKeyChainPlugin(createGate({ keys: keyStore, lastUsed, now: options.now, rateLimits }), createClientAddressOf([]))
  const reached: string[] = []
  const app = new Elysia()
    .use(errorHandling(options.logger ?? silentLogger))
    .use(keyChain.plugin)
    .get(
      '/api/v0/public-read',
      ({ grant }) => {
        reached.push('public-read')
        return { keyId: grant.key.id }
      },
      {
        access: { scope: 'BLOG_READ', public: true },
        query: t.Object({ limit: t.Optional(t.Numeric({ minimum: 1, maximum: 10 })) }),
      },
    )
    .post(
      '/api/v0/public-write',
      ({ body }) => {
        reached.push('public-write')
        return { accepted: body.n }
      },
      {
        access: { scope: 'ANALYTICS_WRITE', public: true },
        body: t.Object({ n: t.Integer({ minimum: 1 }) }),
      },
    )
    .post(
      '/api/v0/private-write',
      ({ body }) => {
        reached.push('private-write')
        return { ok: body.n }
      },
      {
        access: { scope: 'MEMORY_WRITE', public: false },
        body: t.Object({ n: t.Integer() }),
      },
    )
    .get(
      '/api/v0/private-read',
      () => {
        reached.push('private-read')
        return { ok: true }
      },
      {
        access: { scope: 'MEMORY_READ', public: false },
      },
    )
    .get(
      '/api/v0/explode',
      () => {
        reached.push('explode')
        throw new Error('select secret from somewhere failed')
      },
      { access: { scope: null, public: true } },
    )
  return { app, keys, keyStore, lastUsed, reached, db }
}
