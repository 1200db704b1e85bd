/**
 * `bun bench/observability.ts`: the CPU cost per request of the metrics and the request log
 * (src/http/observation.ts), measured in-process with `app.handle` so that the network
 * and the load generator do not drown a cost of well under a microsecond.
 *
 * Three apps answer the same small JSON route: bare Elysia; the same with the request
 * observation (metrics only, the default); the same with LOG_REQUESTS on, its lines
 * written to /dev/null through the service's own logger path (Bun's FileSink). 5
 * interleaved repetitions of 200,000 requests each after a warm-up; medians.
 */
import { openSync } from 'node:fs'
import { createClientAddressOf } from '../src/shared/client-address.ts'
import { Elysia } from 'elysia'
import { createLogger } from '../src/observability/log.ts'
import { createMetrics } from '../src/observability/metrics.ts'
import { requestObservation } from '../src/http/observation.ts'

const REQUESTS = 200_000
const REPETITIONS = 5

function withRoute(app: Elysia) {
  return app.get('/api/v0/whoami', () => ({ businessId: 'b', keyType: 'public', origin: null, allowedOrigins: [] }))
}

function observed(logRequests: boolean) {
  const sink = Bun.file(openSync('/dev/null', 'w')).writer()
  const logger = createLogger({ write: (line) => void sink.write(line) })
  const observation = requestObservation({
    metrics: createMetrics(),
    logger,
    logRequests,
    clientAddress: createClientAddressOf([]),
  })
  const app = withRoute(new Elysia().use(observation.plugin) as unknown as Elysia)
  observation.declareRoutes(app.routes)
  return app
}

const apps: [string, { handle(r: Request): Promise<Response> }][] = [
  ['bare Elysia route', withRoute(new Elysia())],
  ['+ metrics (request observation, LOG_REQUESTS off)', observed(false)],
  ['+ metrics and LOG_REQUESTS=1 (lines to /dev/null)', observed(true)],
]

async function perRequestNs(app: { handle(r: Request): Promise<Response> }, count: number): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const response = await app.handle(new Request('http://localhost/api/v0/whoami'))
    await response.arrayBuffer()
  }
  // Let the last onAfterResponse hooks (run in setImmediate) finish inside the measurement.
  await new Promise((resolve) => setImmediate(resolve))
  return ((performance.now() - started) * 1e6) / count
}

const results = new Map<string, number[]>(apps.map(([label]) => [label, []]))
for (const [, app] of apps) await perRequestNs(app, REQUESTS / 4)
for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
  for (const [label, app] of apps) results.get(label)!.push(await perRequestNs(app, REQUESTS))
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const bare = median(results.get(apps[0]![0])!)
console.log(`bun ${Bun.version}; ${REQUESTS} requests x ${REPETITIONS} interleaved repetitions through app.handle; medians\n`)
console.log('| App | ns per request | added to the bare route |')
console.log('|---|---|---|')
for (const [label] of apps) {
  const ns = median(results.get(label)!)
  console.log(`| ${label} | ${ns.toFixed(0)} | ${label === apps[0]![0] ? '' : `+${(ns - bare).toFixed(0)} ns`} |`)
}
