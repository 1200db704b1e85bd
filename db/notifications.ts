import postgres from 'postgres'

export interface ListenHandlers {
  onNotify(payload: string): void
  /** The channel is listened to: on the first connection and after every reconnection. */
  onListening(): void
  /** The connection was lost: notifications may be missed until the next onListening. */
  onLost(error: unknown): void
}

export interface Listener {
  /** True while the channel is listened to. */
  readonly listening: boolean
  /** The connection's `application_name`, so operators (and tests) can find its backend. */
  readonly applicationName: string
  close(): Promise<void>
}

export interface ListenOptions {
  /** First delay before reconnecting; doubles on each failed attempt up to `maxReconnectDelayMs`. */
  reconnectDelayMs?: number
  maxReconnectDelayMs?: number
  /**
   * While listening, a `select 1` on the connection this often, which must answer within
   * the same time: a path that hangs (no reset, no close) would otherwise look like a quiet
   * channel, and this instance would trust cached keys that others have changed.
   */
  heartbeatMs?: number
}

/**
 * LISTEN on `channel` over a connection of its own, for as long as the process runs.
 *
 * Not postgres.js's `sql.listen`: it re-listens once after a lost connection and gives up
 * silently when that one attempt fails (the database still down), and it tells nobody
 * the connection was lost. Here every loss is reported (so the caller can stop trusting
 * what it cached), a silent connection is found by a heartbeat, and reconnection retries
 * with a growing delay until it succeeds. Each attempt has a client of its own: a client
 * whose connection hung is ended, not reused.
 */
export function listenForever(databaseUrl: string, channel: string, handlers: ListenHandlers, options: ListenOptions = {}): Listener {
  const firstDelay = options.reconnectDelayMs ?? 100
  const maxDelay = options.maxReconnectDelayMs ?? 5_000
  const heartbeatMs = options.heartbeatMs ?? 500
  const applicationName = `keygate-listen-${crypto.randomUUID().slice(0, 8)}`
  let listening = false
  let closed = false
  let delay = firstDelay
  let retry: ReturnType<typeof setTimeout> | undefined
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let client: postgres.Sql | null = null

  function connect(): postgres.Sql {
    const own: postgres.Sql = postgres(databaseUrl, {
      max: 1,
      // The connection must stay open while idle: it is idle until a notification arrives.
      idle_timeout: 0,
      max_lifetime: null,
      fetch_types: false,
      connect_timeout: 5,
      onnotice: () => {},
      connection: { application_name: applicationName },
      onclose() {
        if (client === own) lost(new Error('notification connection closed'))
      },
      // The connection option postgres.js's own `listen` is built on (postgres/src/index.js); not in
      // its typings. The PostgreSQL tests (test/api/invalidation.test.ts) pin it.
      onnotify(name: string, payload: string) {
        if (name === channel && client === own) handlers.onNotify(payload)
      },
    } as postgres.Options<Record<string, postgres.PostgresType>>)
    return own
  }

  function drop(): void {
    clearInterval(heartbeat)
    heartbeat = undefined
    const old = client
    client = null
    void old?.end({ timeout: 0 }).catch(() => {})
  }

  function lost(error: unknown): void {
    drop()
    if (closed) return
    if (listening) {
      listening = false
      handlers.onLost(error)
    }
    scheduleListen()
  }

  function scheduleListen(): void {
    if (closed || retry !== undefined) return
    retry = setTimeout(() => {
      retry = undefined
      void listen()
    }, delay)
    delay = Math.min(delay * 2, maxDelay)
  }

  async function within<T>(query: Promise<T>, ms: number): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`notification connection silent for ${ms} ms`)), ms)
    })
    try {
      return await Promise.race([query, late])
    } finally {
      clearTimeout(timer)
    }
  }

  async function listen(): Promise<void> {
    const own = connect()
    client = own
    try {
      await within(own`listen ${own(channel)}`, 5_000)
    } catch (error) {
      if (client === own) lost(error)
      return
    }
    if (closed || client !== own) return
    delay = firstDelay
    listening = true
    heartbeat = setInterval(() => {
      within(own`select 1`, heartbeatMs).catch((error: unknown) => {
        if (client === own) lost(error)
      })
    }, heartbeatMs)
    heartbeat.unref?.()
    handlers.onListening()
  }

  void listen()

  return {
    get listening() {
      return listening
    },
    applicationName,
    async close() {
      closed = true
      clearTimeout(retry)
      clearInterval(heartbeat)
      listening = false
      const last = client
      client = null
      // A LISTEN connection has nothing to finish; one still looking for a primary would
      // hold `end` for its whole timeout.
      await last?.end({ timeout: 0 })
    },
  }
}
