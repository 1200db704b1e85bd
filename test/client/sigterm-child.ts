// A backend process as the client's README tells it to run: track, and on SIGTERM call
// shutdown() before exiting. test/client/exactly-once.test.ts starts it and stops it.
import { createClient } from '../../clients/node/src/index.ts'

const count = Number(process.env.EVENTS)
const client = createClient({
  key: process.env.KEYGATE_KEY!,
  baseUrl: process.env.KEYGATE_URL!,
  // Two full batches go at once; the rest waits for an interval that never comes before the signal.
  batchSize: 500,
  flushInterval: 600_000,
  onError: (failure) => console.log(JSON.stringify({ reason: failure.reason, dropped: failure.events.length, error: failure.error?.code })),
})

process.on('SIGTERM', async () => {
  const queuedAtSignal = client.stats().queued
  const stats = await client.shutdown(30_000)
  console.log(JSON.stringify({ queuedAtSignal, ...stats }))
  process.exit(0)
})

for (let i = 0; i < count; i++) client.track({ eventType: 'job_done', properties: { i } })
console.log('tracked')
// A server keeps running until it is told to stop.
setInterval(() => {}, 60_000)
