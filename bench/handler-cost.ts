/**
 * `bun bench/handler-cost.ts`: what the service's own code costs per request, without the
 * HTTP server: the service's direct-route handlers (page view, whoami), called in this
 * process with a Request as Bun's server would pass it, against the floor's handlers
 * (bench/floor-routes.ts) on the same Requests, in one run. 64 requests at a time, each
 * batch awaited and followed by one event-loop turn (the direct routes answer at a turn's
 * end); CPU time of this process per request, medians of 5 repetitions, and the cost of
 * building the Requests alone, which both sides pay.
 *
 * Under wrk (bench/whoami.ts) a page view cost 20-30 µs more than the floor's in the same
 * run while this measured about 5 µs: the rest was how the answers met the socket, which
 * is what bench/README.md ("Writes gathered per turn") took apart.
 *
 * Events go nowhere (as in bench/service-without-store.ts); keys live in embedded PGlite
 * in memory, or in DATABASE_URL when set. There is no server socket, so no peer address:
 * neither side reads one.
 */
import { openDatabase } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { createApp } from '../src/app.ts'
import { createLogger } from '../src/observability/log.ts'
import { createFloorRoutes } from './floor-routes.ts'
import { median } from './measure.ts'

const ADMIN_TOKEN = `bench-${crypto.randomUUID()}`
const BODY = '{"eventType":"page_view","url":"https://www.example.com/pricing","anonymousId":"visitor-1"}'
const BATCH = 64
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4000)
const REPETITIONS = 5

type Handler = (request: Request) => Response | Promise<Response>

const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
await migrate(database)
const service = createApp({ database, adminToken: ADMIN_TOKEN, logger: createLogger({ format: 'json' }), eventStore: async () => {} })

async function admin(path: string, body: unknown): Promise<Record<string, string>> {
  const response = await service.app.handle(
    new Request(`http://localhost/admin/v0${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )
  if (response.status !== 201) throw new Error(`POST /admin/v0${path} answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as Record<string, string>
}
const business = await admin('/businesses', { name: 'bench' })
const { key } = await admin(`/businesses/${business.id}/keys`, {
  type: 'public',
  name: 'bench',
  scopes: ['ANALYTICS_WRITE'],
  allowedOrigins: ['example.com'],
  createdBy: 'bench',
  rateLimit: { limit: 1_000_000, windowSeconds: 1 },
})

const served = service.services.direct.served as Record<string, Record<string, Handler>>
const floor = createFloorRoutes(() => undefined) as Record<string, Record<string, Handler>>
const headers = { authorization: `Bearer ${key}`, origin: 'https://www.example.com' }
const routes = [
  {
    name: 'page view, `POST /api/v0/analytics`, 1 event',
    service: served['/api/v0/analytics']!.POST!,
    floor: floor['/api/v0/analytics']!.POST!,
    status: 202,
    request: () =>
      new Request('http://127.0.0.1/api/v0/analytics', {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(BODY.length) },
        body: BODY,
      }),
  },
  {
    name: '`GET /api/v0/whoami`',
    service: served['/api/v0/whoami']!.GET!,
    floor: floor['/api/v0/whoami']!.GET!,
    status: 200,
    request: () => new Request('http://127.0.0.1/api/v0/whoami', { headers }),
  },
]

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** CPU µs per request of `handler` (null: only building the Requests). */
async function measure(make: () => Request, handler: Handler | null, status: number): Promise<number> {
  const before = process.cpuUsage()
  for (let round = 0; round < ROUNDS; round++) {
    if (handler === null) {
      for (let i = 0; i < BATCH; i++) make()
    } else {
      const answers: (Response | Promise<Response>)[] = []
      for (let i = 0; i < BATCH; i++) answers.push(handler(make()))
      const first = (await Promise.all(answers))[0]!
      if (first.status !== status) throw new Error(`answered ${first.status}: ${await first.text()}`)
    }
    await turn()
  }
  const used = process.cpuUsage(before)
  return (used.user + used.system) / (ROUNDS * BATCH)
}

console.log(`bun ${Bun.version}; ${ROUNDS * BATCH} requests a measurement, ${REPETITIONS} repetitions, medians`)
console.log('\n| Route | Requests alone | floor handler | service handler | service - floor |\n|---|---|---|---|---|')
for (const route of routes) {
  await measure(route.request, route.service, route.status)
  await measure(route.request, route.floor, route.status)
  const runs = { requests: [] as number[], floor: [] as number[], service: [] as number[] }
  for (let rep = 0; rep < REPETITIONS; rep++) {
    runs.requests.push(await measure(route.request, null, 0))
    runs.floor.push(await measure(route.request, route.floor, route.status))
    runs.service.push(await measure(route.request, route.service, route.status))
  }
  const [requests, floorUs, serviceUs] = [median(runs.requests), median(runs.floor), median(runs.service)]
  console.log(
    `| ${route.name} | ${requests.toFixed(2)} µs | ${floorUs.toFixed(2)} µs | ${serviceUs.toFixed(2)} µs | ${(serviceUs - floorUs).toFixed(2)} µs |`,
  )
}
await service.drain()
await database.close()
process.exit(0)
