/**
 * `bun bench/ingest-stages.ts`: where the event writer's time goes for a 50-event batch,
 * stage by stage, in this process (no HTTP, no key chain): parsing the body
 * (src/http/json-body.ts), the schema check (TrackBody), the rows (checks of properties and
 * times, UUIDv7 ids), the COPY text, and the COPY of a 500-row flush into the partitioned
 * analytics_events on PostgreSQL (DATABASE_URL), each its own commit. Medians of
 * REPETITIONS rounds; microseconds per event.
 */
import { loadavg } from 'node:os'
import { openDatabase } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { parseJsonBody } from '../src/http/json-body.ts'
import { TrackBody } from '../src/areas/analytics/model.ts'
import { assertStorableJson } from '../src/shared/validation.ts'
import { toEventRow } from '../src/areas/analytics/rows.ts'
import { COPY_EVENTS, copyText, type EventRow } from '../src/events/write.ts'
import { median } from './measure.ts'
import { databaseUrl, ensureDatabase } from './support.ts'

const REPETITIONS = Number(process.env.BENCH_REPETITIONS || 5)
const ORIGIN = 'https://www.example.com'
const event = { eventType: 'page_view', url: `${ORIGIN}/products/42`, anonymousId: 'anon-bench', properties: { plan: 'pro', n: 1 } }
const body = JSON.stringify({ events: Array(50).fill(event) })
const key = { businessId: crypto.randomUUID(), id: crypto.randomUUID() }
const BATCHES = 2_000
const FLUSH_ROWS = 500

await ensureDatabase(databaseUrl)
const database = await openDatabase({ databaseUrl, dataDir: '' })
// Partitions exist for the months the service's maintenance creates ahead: the migration's.
await migrate(database)

function timed(run: () => void, count: number): number {
  const start = Bun.nanoseconds()
  for (let i = 0; i < count; i++) run()
  return (Bun.nanoseconds() - start) / 1000 / (count * 50)
}

const stages: Record<string, number[]> = { parse: [], check: [], rows: [], copyText: [], copy: [] }
for (let r = 0; r < REPETITIONS; r++) {
  stages.parse!.push(timed(() => parseJsonBody(body), BATCHES))
  const parsed = parseJsonBody(body) as { events: (typeof event)[] }
  stages.check!.push(timed(() => TrackBody.check({ body: parsed }), BATCHES))
  const received = new Date().toISOString()
  let rows: EventRow[] = []
  stages.rows!.push(
    timed(() => {
      rows = parsed.events.map((e, i) => {
        assertStorableJson(e.properties, `events[${i}].properties`)
        return toEventRow(e as never, key, ORIGIN, received, received)
      })
    }, BATCHES),
  )
  const flush: EventRow[] = []
  for (let i = 0; i < FLUSH_ROWS / 50; i++) flush.push(...rows.map((row) => ({ ...row, id: Bun.randomUUIDv7() })))
  stages.copyText!.push(
    (() => {
      const start = Bun.nanoseconds()
      for (let i = 0; i < 200; i++) copyText(flush)
      return (Bun.nanoseconds() - start) / 1000 / (200 * FLUSH_ROWS)
    })(),
  )
  const flushes = Array.from({ length: 20 }, () => copyText(flush.map((row) => ({ ...row, id: Bun.randomUUIDv7() }))))
  const start = Bun.nanoseconds()
  for (const text of flushes) await database.copyIn!(COPY_EVENTS, text)
  stages.copy!.push((Bun.nanoseconds() - start) / 1000 / (flushes.length * FLUSH_ROWS))
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; medians of ${REPETITIONS}, µs an event (50-event body, ${FLUSH_ROWS}-row COPY flushes)`,
)
for (const [name, values] of Object.entries(stages))
  console.log(`${name.padEnd(9)} ${median(values).toFixed(2)}  (${values.map((v) => v.toFixed(2)).join(', ')})`)
await database.close()
