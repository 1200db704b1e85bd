import { Elysia } from 'elysia'

/** Liveness and readiness, outside the key chain. */
export function healthRoutes(ping: () => Promise<void>, timeoutMs = 2_000) {
  return new Elysia({ name: 'health' })
    .get('/healthz', () => ({ status: 'ok' }), { detail: { hide: true } })
    .get(
      '/readyz',
      async ({ set }) => {
        try {
          await withTimeout(ping(), timeoutMs)
          return { status: 'ready' }
        } catch {
          set.status = 503
          set.headers['retry-after'] = '5'
          return { status: 'unavailable', reason: 'the database does not answer' }
        }
      },
      { detail: { hide: true } },
    )
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout>
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
