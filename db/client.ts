import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { sql, type SQL } from 'drizzle-orm'
import postgres from 'postgres'
import { watchAvailability, type Availability } from './availability.ts'
import { boundedClient, boundedCopy, probe, type StatementGuard } from './deadline.ts'
import { listenForever, type ListenHandlers, type Listener, type ListenOptions } from './notifications.ts'
import { pgliteAssets } from './pglite-assets.ts'
import * as schema from './schema/index.ts'

/** The Drizzle handle every service takes; the same type over both drivers. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>

export interface Database {
  readonly db: Db
  /**
   * For what the service writes beside requests (usage, `lastUsedAt`): on PostgreSQL a
   * small pool of its own with its own statement timeout, so background work never holds
   * more than `backgroundConnections` of the database and never starves requests; its
   * failures never mark the database down (only the probe does, db/availability.ts).
   * On PGlite, the same single connection as `db`.
   */
  readonly background: Db
  readonly engine: 'pglite' | 'postgres'
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>
  /** Down from a connection-level failure until a probe answers (db/availability.ts). */
  readonly availability: Availability
  /**
   * Runs `task` alone across every instance sharing this database: on PostgreSQL under an
   * advisory lock held by a connection of its own, which `task` also runs on (instances
   * starting together would otherwise race to create the same tables). PGlite has a
   * single owner, so it just runs `task`.
   */
  exclusively<T>(task: (db: Db) => Promise<T>): Promise<T>
  /**
   * Runs `task` unless another holder of `lock` runs one now, anywhere: then answers
   * `skipped` at once. On PostgreSQL, on a connection of its own that holds a session
   * advisory lock (so the task may run statements that refuse a transaction block, such as
   * `DETACH PARTITION ... CONCURRENTLY`), with its own statement and lock timeouts, outside
   * the availability watch: its failures are the task's, never the database's state.
   * PGlite has one owning process: one task per lock in it at a time.
   */
  tryExclusively<T>(lock: string, task: (db: Db) => Promise<T>, limits: SessionLimits): Promise<{ ran: true; result: T } | { ran: false }>
  /**
   * LISTEN on a channel over a connection of its own (db/notifications.ts). PostgreSQL
   * only: PGlite has one owning process, whose own changes need no notification.
   */
  listen?(channel: string, handlers: ListenHandlers, options?: ListenOptions): Listener
  /** PGlite only: the data directory as an archive, to start another database from (tests). */
  archive?(): Promise<Blob>
  /**
   * `COPY ... FROM STDIN` with `text` as its input, within the statement deadline.
   * PostgreSQL only: the event writer's fast path (src/events/write.ts).
   */
  copyIn?(statement: string, text: string): Promise<void>
  close(): Promise<void>
}

/** A dedicated session's timeouts, in ms. */
export interface SessionLimits {
  statementTimeoutMs: number
  lockTimeoutMs: number
}

export interface DatabaseOptions {
  /** PostgreSQL URL: use postgres.js. Unset: embedded PGlite. */
  databaseUrl?: string
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  dataDir: string
  /** PGlite only: start from this archive of a data directory (`archive()`), skipping initdb. */
  fromArchive?: Blob
  /** postgres.js pool size. */
  maxConnections?: number
  /**
   * Longest wait for one statement (or one whole transaction) on PostgreSQL, in ms: both the
   * server's statement_timeout and a client-side deadline (db/deadline.ts). The contract
   * wants a 503 within 5 s when the database hangs.
   */
  queryTimeoutMs?: number
  /** The background pool's size (default 2). */
  backgroundConnections?: number
  /** Longest wait for one background statement or transaction, in ms (default 10 s). */
  backgroundTimeoutMs?: number
  /** Told the text of every statement Drizzle sends, on every pool (test/db/event-store-rules.test.ts checks them). */
  onStatement?: (statement: string) => void
}

const QUERY_TIMEOUT_MS = 4_000
/** Background writes may take longer than a request could wait; their own pool holds them. */
const BACKGROUND_TIMEOUT_MS = 10_000
const BACKGROUND_CONNECTIONS = 2
/** The readiness probe and the availability probe: shorter than any client's patience. */
const PROBE_TIMEOUT_MS = 2_000
/** How long closing waits for the pool's connections to finish before cutting them. */
const CLOSE_TIMEOUT_S = 1

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const onStatement = options.onStatement
  const drizzleOptions = { schema, ...(onStatement ? { logger: { logQuery: (statement: string) => onStatement(statement) } } : {}) }
  if (options.databaseUrl) {
    const queryTimeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS
    const backgroundTimeoutMs = options.backgroundTimeoutMs ?? BACKGROUND_TIMEOUT_MS
    // One name per process for both pools: the probe ends this process's sessions on a server
    // that takes no writes, and only those (db/deadline.ts), so both find the primary again.
    const applicationName = `keygate-${crypto.randomUUID().slice(0, 8)}`
    const pool = (max: number, timeoutMs: number) =>
      postgres(options.databaseUrl!, {
        max,
        onnotice: () => {},
        // A dead server must surface as an error quickly (503 unavailable), not hang.
        connect_timeout: 5,
        // postgres.js waits up to 20 s between reconnections after a run of failures: the
        // service would stay down that long after the database is back. Half a second at most.
        backoff: (retries) => Math.min(0.05 * 2 ** retries, 0.5),
        connection: {
          application_name: applicationName,
          statement_timeout: timeoutMs,
          // A transaction its client gave up on (a deadline) must not hold its locks.
          idle_in_transaction_session_timeout: timeoutMs * 2,
        },
      })
    const raw = pool(options.maxConnections ?? 10, queryTimeoutMs)
    /** `work` on a connection of its own, ended after it whatever it did: that releases its session locks. */
    const ownSession = async <T>(
      connection: NonNullable<Parameters<typeof postgres>[1]>['connection'],
      work: (single: postgres.Sql) => Promise<T>,
    ): Promise<T> => {
      const single = postgres(options.databaseUrl!, { max: 1, onnotice: () => {}, connect_timeout: 5, connection })
      try {
        return await work(single)
      } finally {
        await single.end({ timeout: 5 })
      }
    }
    const rawBackground = pool(options.backgroundConnections ?? BACKGROUND_CONNECTIONS, backgroundTimeoutMs)
    const ping = () => probe(raw, PROBE_TIMEOUT_MS)
    const availability = watchAvailability(ping)
    const bounded = boundedClient(raw, queryTimeoutMs, availability)
    const db = drizzlePostgres(bounded, drizzleOptions) as unknown as Db
    // Refused at once while the database is down, like any statement; a failure notes nothing.
    const backgroundGuard: StatementGuard = {
      admit: () => availability.admit(),
      suspicion: () => availability.suspicion(),
      failed: () => false,
      abortOnDown: (abort) => availability.abortOnDown(abort),
    }
    const background = drizzlePostgres(boundedClient(rawBackground, backgroundTimeoutMs, backgroundGuard), drizzleOptions) as unknown as Db
    return {
      db,
      background,
      engine: 'postgres',
      ping,
      availability,
      exclusively: (task) =>
        ownSession({}, async (single) => {
          await single`select pg_advisory_lock(hashtext('keygate:exclusive'))`
          return task(drizzlePostgres(single, drizzleOptions) as unknown as Db)
        }),
      tryExclusively: (lock, task, limits) =>
        ownSession(
          {
            application_name: applicationName,
            statement_timeout: limits.statementTimeoutMs,
            lock_timeout: limits.lockTimeoutMs,
            idle_in_transaction_session_timeout: limits.statementTimeoutMs * 2,
          },
          async (single) => {
            const [row] = await single`select pg_try_advisory_lock(hashtext(${lock})) as locked`
            if (!row?.locked) return { ran: false as const }
            return { ran: true as const, result: await task(drizzlePostgres(single, drizzleOptions) as unknown as Db) }
          },
        ),
      listen: (channel, handlers, listenOptions) => listenForever(options.databaseUrl!, channel, handlers, listenOptions),
      copyIn: boundedCopy(raw, queryTimeoutMs, availability),
      close: async () => {
        availability.close()
        // Called once the service has drained: nothing of ours still runs. postgres.js keeps
        // a statement whose socket failed as its connection's current one, and `end` waits
        // for such a connection until its timeout: after a failover, every stop took it whole.
        await Promise.all([raw.end({ timeout: CLOSE_TIMEOUT_S }), rawBackground.end({ timeout: CLOSE_TIMEOUT_S })])
      },
    }
  }
  // In process: no network to hang, and a statement runs on this thread (a timer could not
  // interrupt it), so statements are not bounded; availability only ever changes if the
  // embedded engine itself fails.
  const client = await PGlite.create(options.dataDir, {
    ...(await pgliteAssets(options.dataDir)),
    loadDataDir: options.fromArchive,
    // A first start's initdb sizes the shared buffers it writes into the data directory: at
    // PostgreSQL's 128 MB the first start peaked at 1,020 MiB, at 32 MB at 874 MiB
    // (docs/operations.md, "Memory"); an embedded database is a small one.
    initDbStartParams: ['-c', 'shared_buffers=32MB'],
  })
  const db = drizzlePglite(client, drizzleOptions) as unknown as Db
  const ping = async () => {
    await client.query('select 1')
  }
  const availability = watchAvailability(ping)
  const running = new Set<string>()
  return {
    db,
    background: db,
    engine: 'pglite',
    ping,
    availability,
    exclusively: (task) => task(db),
    tryExclusively: async (lock, task) => {
      if (running.has(lock)) return { ran: false }
      running.add(lock)
      try {
        return { ran: true, result: await task(db) }
      } finally {
        running.delete(lock)
      }
    },
    archive: () => client.dumpDataDir('none'),
    close: async () => {
      availability.close()
      await client.close()
    },
  }
}

/**
 * Rows of a raw query. postgres.js answers an array and PGlite `{ rows }`; code above
 * the driver calls this instead of caring which.
 */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown
  if (Array.isArray(result)) return result as T[]
  return ((result as { rows?: T[] }).rows ?? []) as T[]
}

export { sql }
