import { RedisClient } from 'bun'
import type { Budget } from '../../config.ts'

export interface Granted {
  /** Requests leased now (0: the budget is spent). */
  tokens: number
  /** What the shared budget has left after this lease. */
  remaining: number
  /** With tokens 0: milliseconds until one request would fit. */
  waitMs: number
}

export interface SharedCounters {
  /** False while Redis cannot be reached: the limiter then counts alone. */
  available(): boolean
  /** Charges `debt` accepted requests and leases up to `want` more; null when Redis failed. */
  lease(bucket: string, budget: Budget, want: number, debt: number): Promise<Granted | null>
  close(): Promise<void>
}

/**
 * GCRA on Redis, one key per bucket holding its theoretical arrival time, moved by one
 * script so concurrent instances never race. Redis's own clock is the only clock, so
 * instances with skewed clocks still share one budget.
 */
const LEASE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local debt = tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
tat = tat + debt * interval
local room = math.floor((window - (tat - now)) / interval + 0.000001)
local grant = math.max(0, math.min(want, room))
tat = tat + grant * interval
redis.call('SET', KEYS[1], tostring(tat), 'PX', math.ceil(tat - now) + 1000)
local wait = 0
if grant == 0 then wait = math.max(1, math.ceil(tat + interval - window - now)) end
return {grant, math.max(0, room - grant), wait}
`

/** A Redis that does not answer within this long counts as gone for this request. */
const ANSWER_TIMEOUT_MS = 250
/** The first connection, at start-up, may take longer (a busy machine starting everything at once). */
const FIRST_CONNECT_TIMEOUT_MS = 3_000
const PROBE_INTERVAL_MS = 1_000
/**
 * While up, a PING this often: an instance that is not leasing at the moment still
 * notices (and logs) the loss within a second, not at its next lease.
 */
const HEARTBEAT_MS = 500

export function createSharedCounters(url: string, log: (line: string) => void): SharedCounters {
  const client = new RedisClient(url, {
    // Fail at once while disconnected instead of queueing requests behind a dead server.
    enableOfflineQueue: false,
    autoReconnect: true,
    connectionTimeout: FIRST_CONNECT_TIMEOUT_MS,
  })
  let up = false
  let probing: ReturnType<typeof setInterval> | null = null
  let closed = false

  function markDown(error: unknown): void {
    if (!up && probing !== null) return
    up = false
    // Logged once per state change; the URL may hold a password, so it is not logged.
    log(`rate-limit counters: Redis unreachable (${describe(error)}); each instance counts alone until it is back`)
    startProbing()
  }

  function startProbing(): void {
    if (probing !== null || closed) return
    probing = setInterval(() => void probe(), PROBE_INTERVAL_MS)
    probing.unref?.()
  }

  async function probe(): Promise<void> {
    try {
      if (!client.connected) await withTimeout(client.connect())
      await withTimeout(client.send('PING', []))
      if (probing !== null) clearInterval(probing)
      probing = null
      if (!up) log('rate-limit counters: Redis is back; instances share budgets again')
      up = true
    } catch {
      // Still down: the next probe tries again.
    }
  }

  // A dropped connection is a loss at once; a hung one is found by the heartbeat.
  client.onclose = (error) => {
    if (!closed) markDown(error ?? new Error('connection closed'))
  }
  const heartbeat = setInterval(() => {
    if (!up || closed) return
    withTimeout(client.send('PING', [])).catch((error: unknown) => markDown(error))
  }, HEARTBEAT_MS)
  heartbeat.unref?.()

  // Starts down; the first probe (at once) brings it up, logged as "back" only after a fall.
  void (async () => {
    try {
      await withTimeout(client.connect(), FIRST_CONNECT_TIMEOUT_MS)
      up = true
    } catch (error) {
      markDown(error)
    }
  })()

  return {
    available: () => up,
    async lease(bucket, budget, want, debt) {
      try {
        const interval = (budget.windowSeconds * 1000) / budget.limit
        const answer = (await withTimeout(
          client.send('EVAL', [
            LEASE_SCRIPT,
            '1',
            `keygate:rl:${bucket}`,
            String(interval),
            String(budget.windowSeconds * 1000),
            String(want),
            String(debt),
          ]),
        )) as [number, number, number]
        return { tokens: Number(answer[0]), remaining: Number(answer[1]), waitMs: Number(answer[2]) }
      } catch (error) {
        markDown(error)
        return null
      }
    },
    async close() {
      closed = true
      clearInterval(heartbeat)
      if (probing !== null) clearInterval(probing)
      client.close()
    },
  }
}

function withTimeout<T>(promise: Promise<T>, ms = ANSWER_TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout>
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

function describe(error: unknown): string {
  if (error instanceof Error) return (error as { code?: string }).code ?? error.message
  return String(error)
}
