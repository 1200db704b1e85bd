import type { Static } from 'elysia'
import type { TrackedEvent } from '../src/areas/analytics/model.ts'
import type { EventRow } from '../src/events/write.ts'
import { toEventRow } from '../src/areas/analytics/rows.ts'

/** Rows a statement, as the service's group commit takes them. */
const MAX_ROWS = 500

interface Waiting {
  rows: EventRow[]
  resolve(): void
  reject(error: unknown): void
}

/**
 * The least a service must do to answer a page view only after its rows are committed:
 * hold the turn's rows, and at the turn's end send them as one statement on each free
 * connection (`inFlight` of them); a statement that commits answers its requests and takes
 * what waits. No per-tenant queues, no bound, no client check, no failure isolation, no
 * retry: what the service's group commit (src/events/group-commit.ts) adds to this
 * is its own cost. `insert` is the service's own statement, so the database's work is the
 * same on both sides.
 */
export function createFloorCommit(insert: (rows: readonly EventRow[]) => Promise<void>, inFlight: number) {
  let waiting: Waiting[] = []
  let running = 0
  let scheduled = false

  function start(): void {
    scheduled = false
    while (running < inFlight && waiting.length > 0) {
      // The waiting requests in order, whole, up to MAX_ROWS (a larger one goes alone).
      let rows = waiting[0]!.rows.length
      let taken = 1
      while (taken < waiting.length && rows + waiting[taken]!.rows.length <= MAX_ROWS) rows += waiting[taken++]!.rows.length
      const batch = waiting.slice(0, taken)
      waiting = waiting.slice(taken)
      running++
      insert(batch.length === 1 ? batch[0]!.rows : batch.flatMap((w) => w.rows)).then(
        () => {
          for (const w of batch) w.resolve()
          running--
          start()
        },
        (error: unknown) => {
          for (const w of batch) w.reject(error)
          running--
          start()
        },
      )
    }
  }

  return function commit(rows: EventRow[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      waiting.push({ rows, resolve, reject })
      if (!scheduled && running < inFlight) {
        scheduled = true
        setImmediate(start)
      }
    })
  }
}

/** A checked event's row, as the service stores it (`timestamp` taken as sent: the floor checks no range). */
export function floorRow(event: Static<typeof TrackedEvent>, key: { businessId: string; id: string }, origin: string | null): EventRow {
  const received = new Date().toISOString()
  return toEventRow(event, key, origin, event.timestamp ?? received, received)
}
