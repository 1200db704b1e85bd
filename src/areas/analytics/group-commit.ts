import { ApiError } from '../../errors.ts'

export interface GroupCommitStats {
  /** Successful inserts, each one statement and one commit. */
  commits: number
  /** Rows those commits wrote. */
  rows: number
  /** write() calls those commits answered. */
  requests: number
}

export interface GroupCommitter<Row> {
  /** Resolves once `rows` are committed; rejects with the error of the insert that carried them. */
  write(rows: readonly Row[]): Promise<void>
  /** Writes everything queued, then refuses new writes (graceful shutdown). */
  close(): Promise<void>
  readonly stats: Readonly<GroupCommitStats>
}

interface Waiting<Row> {
  rows: readonly Row[]
  resolve(): void
  reject(error: unknown): void
}

/**
 * Group commit: the rows of every request that waits are written by one insert, in one
 * transaction, and each request is answered only after that commit.
 *
 * One insert is in flight at a time. A write that finds the committer idle starts an
 * insert at once (no timer, so no added latency at low load); writes that arrive while an
 * insert runs queue up and leave together when it finishes. Under load, batches grow by
 * themselves to what arrives during one round trip, capped at `maxBatchRows` (a single
 * request larger than the cap still goes alone, whole). When an insert fails, every request
 * in it gets that error and none of its rows are stored: one statement commits all or none.
 */
export function createGroupCommitter<Row>(options: {
  insert: (rows: Row[]) => Promise<void>
  maxBatchRows?: number
}): GroupCommitter<Row> {
  const maxBatchRows = options.maxBatchRows ?? 2_000
  const stats: GroupCommitStats = { commits: 0, rows: 0, requests: 0 }
  let queue: Waiting<Row>[] = []
  let running: Promise<void> | null = null
  let closed = false

  function takeBatch(): Waiting<Row>[] {
    let rows = queue[0]!.rows.length
    let count = 1
    while (count < queue.length && rows + queue[count]!.rows.length <= maxBatchRows) {
      rows += queue[count]!.rows.length
      count++
    }
    const batch = queue.slice(0, count)
    queue = queue.slice(count)
    return batch
  }

  async function commit(batch: Waiting<Row>[]): Promise<void> {
    const rows = batch.length === 1 ? [...batch[0]!.rows] : batch.flatMap((waiting) => waiting.rows)
    try {
      await options.insert(rows)
    } catch (error) {
      for (const waiting of batch) waiting.reject(error)
      return
    }
    stats.commits++
    stats.rows += rows.length
    stats.requests += batch.length
    for (const waiting of batch) waiting.resolve()
  }

  async function run(): Promise<void> {
    try {
      while (queue.length > 0) await commit(takeBatch())
    } finally {
      running = null
    }
  }

  return {
    write(rows) {
      if (closed) {
        return Promise.reject(
          new ApiError('unavailable', 'The service is shutting down; nothing was written. Retry in a moment.', {
            'retry-after': '1',
          }),
        )
      }
      if (rows.length === 0) return Promise.resolve()
      return new Promise<void>((resolve, reject) => {
        queue.push({ rows, resolve, reject })
        running ??= run()
      })
    },
    async close() {
      closed = true
      await running
    },
    stats,
  }
}
