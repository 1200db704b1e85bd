import { Elysia } from 'elysia'

/**
 * Liveness and readiness, outside the key chain. Ready while every database answers: the
 * service's, and the event store's when EVENTS_DATABASE_URL gives it one of its own. A 503
 * names the ones that do not; the routes that need only the other keep answering.
 */
export function healthRoutes(pings: Record<string, () => Promise<void>>, timeoutMs = 2_000) {
  const named = Object.entries(pings)
  return new Elysia({ name: 'health' })
    .get('/healthz', () => ({ status: 'ok' }), { detail: { hide: true } })
    .get(
      '/readyz',
      async ({ set }) => {
        const answers = await Promise.allSettled(named.map(([, ping]) => withTimeout(ping(), timeoutMs)))
        const silent = named.filter((_, i) => answers[i]!.status === 'rejected').map(([name]) => name)
        if (silent.length === 0) return { status: 'ready' }
        set.status = 503
        set.headers['retry-after'] = '5'
        return { status: 'unavailable', reason: `the ${silent.join(' and the ')} ${silent.length > 1 ? 'do' : 'does'} not answer` }
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
