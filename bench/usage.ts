/**
 * What usage counting (src/usage/recorder.ts) adds to each request, in ns of CPU on the
 * request path, against the lastUsedAt touch the chain already does per request, in one
 * run. Nothing is flushed during the measurement (the interval is long), so this is the
 * request path's share only. Run: bun bench/usage.ts
 */
import type { Db } from '../db/client.ts'
import { createUsageRecorder } from '../src/usage/recorder.ts'

function perCall(label: string, iterations: number, fn: (i: number) => unknown): number {
  for (let i = 0; i < iterations / 10; i++) fn(i)
  const start = Bun.nanoseconds()
  for (let i = 0; i < iterations; i++) fn(i)
  const ns = (Bun.nanoseconds() - start) / iterations
  console.log(`${label.padEnd(58)} ${ns.toFixed(1).padStart(8)} ns`)
  return ns
}

// Never called: the flush interval outlasts the run.
const noDb = {} as Db
const usage = createUsageRecorder(noDb, { flushIntervalMs: 3_600_000 })
const keys = Array.from({ length: 1000 }, () => crypto.randomUUID())
const now = Date.now()
let sink = 0

const counts = new Map<string, number>()
const baseline = perCall('Map increment by key id (the floor)', 2_000_000, (i) => {
  const id = keys[i % 1000]!
  counts.set(id, (counts.get(id) ?? 0) + 1)
})
const accepted = perCall('usage.accepted(key, scope) (a 2xx answer)', 2_000_000, (i) => {
  usage.accepted(keys[i % 1000]!, 'ANALYTICS_WRITE', now + (i & 1023))
})
const refused = perCall('usage.refused(key, code) (an error answer)', 2_000_000, (i) => {
  usage.refused(keys[i % 1000]!, 'origin_not_allowed', now)
})
const origin = perCall('usage.origin(key, origin, reported) (a refused origin)', 2_000_000, (i) => {
  usage.origin(keys[i % 1000]!, 'https://evil.example.net', false, now)
})
sink += counts.size
console.log(
  `\naccepted / Map increment: ${(accepted / baseline).toFixed(2)}; refused: ${(refused / baseline).toFixed(2)}; origin: ${(origin / baseline).toFixed(2)}`,
)
console.log(`distinct counts held: ${usage.stats.dropped} dropped (bound 100,000)`)
process.exit(sink >= 0 ? 0 : 1)
