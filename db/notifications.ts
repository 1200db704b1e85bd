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
}

/**
 * LISTEN on `channel` over a connection of its own, for as long as the process runs.
 *
 * Not postgres.js's `sql.listen`: it re-listens once after a lost connection and gives up
 * silently when that one attempt fails (the database still down), and it tells nobody
 * the connection was lost. Here every loss is reported (so the caller can stop trusting
 * what it cached) and reconnection retries with a growing delay until it succeeds.
 */
export function listenForever(
  databaseUrl: string,
  channel: string,
  handlers: ListenHandlers,
  options: ListenOptions = {},
): Listener {
  const firstDelay = options.reconnectDelayMs ?? 100
  const maxDelay = options.maxReconnectDelayMs ?? 5_000
  const applicationName = `keygate-listen-${crypto.randomUUID().slice(0, 8)}`
  let listening = false
  let closed = false
  let delay = firstDelay
  let retry: ReturnType<typeof setTimeout> | undefined

  const client = postgres(databaseUrl, {
    max: 1,
    // The connection must stay open while idle: it is idle until a notification arrives.
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: applicationName },
    onclose() {
      if (closed) return
      lost(new Error('notification connection closed'))
    },
    // The connection option postgres.js's own `listen` is built on (src/index.js); not in
    // its typings. The PostgreSQL tests (test/api/invalidation.test.ts) pin it.
    onnotify(name: string, payload: string) {
      if (name === channel) handlers.onNotify(payload)
    },
  } as postgres.Options<{}>)

  function lost(error: unknown): void {
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

  async function listen(): Promise<void> {
    try {
      await client`listen ${client(channel)}`
    } catch (error) {
      lost(error)
      return
    }
    if (closed) return
    delay = firstDelay
    listening = true
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
      listening = false
      await client.end({ timeout: 5 })
    },
  }
}
