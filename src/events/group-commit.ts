import { DEFAULT_INGEST_QUEUE_ROWS } from '../config.ts'
import { ApiError } from '../errors.ts'

export interface GroupCommitStats {
  /** Rows waiting for an insert or in one that has not committed yet (a gauge). */
  queuedRows: number
  /** Successful inserts, each one statement and one commit. */
  commits: number
  /** Rows those commits wrote. */
  rows: number
  /** write() calls those commits answered. */
  requests: number
  /** write() calls refused at once because the queue was full. */
  refusedFull: number
  /** write() calls dropped before their insert began because their client had gone. */
  abandoned: number
}

export interface GroupCommitter<Row> {
  /**
   * Resolves once `rows` are committed; rejects with the error of the insert that carried
   * them, or at once with 503 when the queue (or this tenant's share of it) is full.
   * `client`: the request. Rows that waited `checkClientAfterMs` or longer are dropped
   * (rejected with 503) if their client has gone by the time an insert takes them; the
   * signal is read only then, as reading it costs a visible share of a request
   * (docs/decisions.md, "Ingestion bounds"). A client that went away retries with the same
   * event ids.
   */
  write(tenant: string, rows: readonly Row[], client?: { readonly signal: AbortSignal }): Promise<void>
  /**
   * Throws the 503 a write for `tenant` would get now because its share or the queue is
   * full: called before a body is read, so a flood is shed without parsing it.
   */
  checkRoom(tenant: string): void
  /** Writes everything queued, then refuses new writes (graceful shutdown). */
  close(): Promise<void>
  readonly stats: Readonly<GroupCommitStats>
}

export interface GroupCommitOptions<Row> {
  insert: (rows: readonly Row[]) => Promise<void>
  /** Rows per insert; a single request larger than this still goes alone, whole. */
  maxBatchRows?: number
  /** Most rows waiting to commit (INGEST_QUEUE_ROWS); over it, 503 at once. */
  maxQueuedRows?: number
  /** Most rows one tenant may have waiting: one business's flood leaves room for the others. */
  maxTenantRows?: number
  /** Inserts in flight at once (more than one only where the database has the connections). */
  concurrency?: number
  /** True for errors that are not a row's fault (a database that is down): no retry alone. */
  isUnavailable?: (error: unknown) => boolean
  /** How long rows wait before their client is asked whether it is still there (default 250 ms). */
  checkClientAfterMs?: number
  /** Milliseconds for those waits (default performance.now; tests move it). */
  clock?: () => number
}

/** A tenant's waiting requests, oldest first from `head`, and the rows they hold. */
interface TenantQueue<Row> {
  queue: Waiting<Row>[]
  head: number
  rows: number
}

interface Waiting<Row> {
  tenant: string
  /** The tenant's queue this request waits in (live until the request is released). */
  queue: TenantQueue<Row>
  rows: readonly Row[]
  resolve(): void
  reject(error: unknown): void
  /** The request, for rows that had to wait: checked when an insert comes to take them. */
  client: { readonly signal: AbortSignal } | undefined
  /** When they began to wait (performance.now), with `client`. */
  since: number
}

/**
 * Group commit with bounds and fairness. Requests queue per tenant (business); an insert
 * takes requests from the tenants in turn, so a business flooding with 500-event batches
 * cannot keep another's single event out of the next insert, and each tenant may hold at
 * most `maxTenantRows` of the `maxQueuedRows` the queue holds: past either, 503 at once.
 *
 * Writes wait for the end of the event loop's turn (setImmediate): the free insert slots
 * then take every write the turn brought, so the requests one socket poll delivered share
 * one insert (bench/README.md, "Writes gathered per turn"). Writes arriving while inserts
 * run leave together with the next free slot. Each request is answered only after the
 * commit that carried its rows.
 *
 * A failed insert fails no row that is fine: unless the database itself is unavailable,
 * every request of the failed batch is inserted again on its own, so only the request at
 * fault gets the error. (One request's rows are all or nothing: one statement.)
 */
export function createGroupCommitter<Row>(options: GroupCommitOptions<Row>): GroupCommitter<Row> {
  const maxBatchRows = options.maxBatchRows ?? 500
  const maxQueuedRows = options.maxQueuedRows ?? DEFAULT_INGEST_QUEUE_ROWS
  const maxTenantRows = options.maxTenantRows ?? Math.max(1, Math.floor(maxQueuedRows / 2))
  const concurrency = options.concurrency ?? 1
  const isUnavailable = options.isUnavailable ?? (() => false)
  const checkClientAfterMs = options.checkClientAfterMs ?? 250
  const clock = options.clock ?? (() => performance.now())
  const stats: GroupCommitStats = { queuedRows: 0, commits: 0, rows: 0, requests: 0, refusedFull: 0, abandoned: 0 }
  // Tenants in the order they are served; each with its own queue and row count.
  const tenants = new Map<string, TenantQueue<Row>>()
  let running = 0
  /** Whether a turn's end is already set to start the free slots. */
  let slotsScheduled = false
  let idle: (() => void) | null = null
  let closed = false

  function release(waiting: Waiting<Row>): void {
    // A tenant's queue leaves the map only once none of its rows is unreleased, so the
    // waiting request's own reference is the live queue.
    const tenant = waiting.queue
    tenant.rows -= waiting.rows.length
    stats.queuedRows -= waiting.rows.length
    if (tenant.rows === 0 && tenant.head === tenant.queue.length) tenants.delete(waiting.tenant)
  }

  /** Rows whose client went away while they waited: never written, and the request told so. */
  function abandon(waiting: Waiting<Row>): void {
    stats.abandoned++
    release(waiting)
    waiting.reject(new ApiError('unavailable', 'The client went away before its events were written; nothing was written.'))
  }

  /** Whether rows that waited since `waiting.since` had their client asked, and it was gone. */
  function gone(waiting: Waiting<Row>, now: number): boolean {
    return waiting.client !== undefined && now - waiting.since >= checkClientAfterMs && waiting.client.signal.aborted
  }

  /** The tenant's oldest request whose client is still there; gone ones are abandoned on the way. */
  function peek(tenant: TenantQueue<Row>, now: number): Waiting<Row> | undefined {
    let next = tenant.queue[tenant.head]
    while (next !== undefined && gone(next, now)) {
      tenant.head++
      abandon(next)
      next = tenant.queue[tenant.head]
    }
    return next
  }

  /**
   * Takes the request `peek` answered: an index step, since shifting an array is linear in
   * its length. Taken entries are cut off once they are half the array, so a queue that
   * never empties under steady load does not keep every request it ever held.
   */
  function take(tenant: TenantQueue<Row>): void {
    tenant.head++
    if (tenant.head === tenant.queue.length) {
      tenant.queue = []
      tenant.head = 0
    } else if (tenant.head >= 64 && tenant.head * 2 >= tenant.queue.length) {
      tenant.queue = tenant.queue.slice(tenant.head)
      tenant.head = 0
    }
  }

  /** One request from each tenant in turn, then again, until the batch is full. */
  function takeBatch(): Waiting<Row>[] {
    const now = clock()
    const batch: Waiting<Row>[] = []
    let rows = 0
    let progress = true
    while (progress) {
      progress = false
      for (const [name, tenant] of tenants) {
        // Alone, a tenant has no one to take turns with: its requests go in order until full.
        const alone = tenants.size === 1
        let took = false
        for (let next = peek(tenant, now); next !== undefined; next = alone ? peek(tenant, now) : undefined) {
          if (batch.length > 0 && rows + next.rows.length > maxBatchRows) break
          take(tenant)
          batch.push(next)
          rows += next.rows.length
          took = true
          if (rows >= maxBatchRows) break
        }
        progress ||= took
        // Round robin: a served tenant goes to the back of the line.
        if (took && !alone) {
          tenants.delete(name)
          tenants.set(name, tenant)
        }
        if (rows >= maxBatchRows) return batch
      }
    }
    return batch
  }

  /** Inserts the batch's rows and counts the commit. */
  function insert(batch: Waiting<Row>[]): Promise<void> {
    const rows = batch.length === 1 ? batch[0]!.rows : batch.flatMap((waiting) => waiting.rows)
    let inserted: Promise<void>
    try {
      inserted = options.insert(rows)
    } catch (error) {
      inserted = Promise.reject(error)
    }
    return inserted.then(() => {
      stats.commits++
      stats.rows += rows.length
      stats.requests += batch.length
    })
  }

  /** Commits one batch and answers each of its requests; never rejects. */
  function commit(batch: Waiting<Row>[]): Promise<void> {
    return insert(batch).then(
      () => {
        for (const waiting of batch) waiting.resolve()
        for (const waiting of batch) release(waiting)
      },
      (error: unknown) => commitFailed(batch, error),
    )
  }

  async function commitFailed(batch: Waiting<Row>[], error: unknown): Promise<void> {
    try {
      if (batch.length === 1 || isUnavailable(error)) {
        for (const waiting of batch) waiting.reject(error)
      } else {
        // Find the request at fault: each one alone.
        for (const waiting of batch) {
          try {
            await insert([waiting])
            waiting.resolve()
          } catch (own) {
            waiting.reject(own)
          }
        }
      }
    } finally {
      for (const waiting of batch) release(waiting)
    }
  }

  /** Starts free insert slots until one finds nothing left to take. */
  function startSlots(): void {
    slotsScheduled = false
    let took = true
    while (took && running < concurrency) took = run()
  }

  /**
   * One insert slot: takes batches until the queues are empty. Reads the queues at once,
   * before any await. Answers whether it found a batch to take.
   */
  function run(): boolean {
    running++
    return next()
  }

  function next(): boolean {
    const batch = takeBatch()
    if (batch.length > 0) {
      void commit(batch).then(next)
      return true
    }
    running--
    if (running === 0) idle?.()
    return false
  }

  function queueFull(): ApiError {
    stats.refusedFull++
    return new ApiError(
      'unavailable',
      'Too many events are waiting to be written; nothing of this request was written. Retry after the delay in Retry-After.',
      { headers: { 'retry-after': '1' } },
    )
  }

  function write(tenant: string, rows: readonly Row[], client?: { readonly signal: AbortSignal }): Promise<void> {
    if (closed) {
      return Promise.reject(
        new ApiError('unavailable', 'The service is shutting down; nothing was written. Retry in a moment.', {
          headers: { 'retry-after': '1' },
        }),
      )
    }
    if (rows.length === 0) return Promise.resolve()
    let queue = tenants.get(tenant)
    // A request larger than the whole cap could never fit: it may go alone into an empty queue.
    const tooMuch =
      stats.queuedRows > 0 && (stats.queuedRows + rows.length > maxQueuedRows || (queue?.rows ?? 0) + rows.length > maxTenantRows)
    if (tooMuch) return Promise.reject(queueFull())
    if (queue === undefined) {
      queue = { queue: [], head: 0, rows: 0 }
      tenants.set(tenant, queue)
    }
    const { promise, resolve, reject } = Promise.withResolvers<void>()
    // Every field set here, the same shape for every request. Its client is asked, if it
    // waited long enough, when an insert comes to take it.
    const waiting: Waiting<Row> = {
      tenant,
      queue,
      rows,
      resolve,
      reject,
      client,
      since: client === undefined ? 0 : clock(),
    }
    queue.queue.push(waiting)
    queue.rows += rows.length
    stats.queuedRows += rows.length
    // A free slot takes the turn's writes once the turn ends; a busy one, when it is done.
    if (running < concurrency && !slotsScheduled) {
      slotsScheduled = true
      setImmediate(startSlots)
    }
    return promise
  }

  return {
    write,
    checkRoom(tenant) {
      const full = stats.queuedRows >= maxQueuedRows || (tenants.get(tenant)?.rows ?? 0) >= maxTenantRows
      if (full) throw queueFull()
    },
    async close() {
      closed = true
      // What waits for the turn's end goes now: nothing is written after close resolves.
      startSlots()
      if (running > 0) await new Promise<void>((resolve) => (idle = resolve))
    },
    stats,
  }
}
