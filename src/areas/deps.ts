import type { Db } from '../../db/client.ts'
import type { KeyChainPlugin } from '../http/key-chain-plugin.ts'
import type { DirectRoutes } from '../http/direct-route.ts'
import type { IngestFigures } from '../observability/metrics.ts'
import type { Erasures } from '../events/erasure.ts'
import type { Retention } from '../events/retention.ts'
import type { CopyIn, EventRow } from '../events/write.ts'

/** What every area plugin receives from createApp. */
export interface AreaDeps {
  /** The service's database: keys, businesses, audience, blog, flows, memory. */
  db: Db
  /** The event store's: EVENTS_DATABASE_URL's database when set, else the same as `db` (docs/scaling.md, "A database for events"). */
  events: Db
  /** The key chain as an Elysia plugin: `.use(deps.keyChain)` gives routes the `access` option (their rule) and handlers the `grant`. */
  keyChain: KeyChainPlugin
  /**
   * Hot routes answered by one function (src/http/direct-route.ts). Such routes go to
   * `hotAreas`, before the app's global hooks.
   */
  direct: DirectRoutes
  /** Each business's event retention: reads and the `timestamp` bound. */
  retention: Retention
  /** Erasure requests and their background deletion. */
  erasures: Erasures
  /** Registers work to finish before the database closes (buffered writes). */
  onShutdown(task: () => Promise<void>): void
  /** Where /metrics reads the ingest queue's figures (keygate_ingest_queue_rows, keygate_ingest_rows_total). */
  reportIngest?(source: () => IngestFigures): void
  /** Bounds of the analytics write queue (src/events/group-commit.ts). */
  ingest?: {
    maxQueuedRows: number
    concurrency: number
    store?: (rows: readonly EventRow[]) => Promise<void>
    /** COPY on PostgreSQL: the event writer's fast path for batches. */
    copyIn?: CopyIn
  }
}
