/**
 * The backend client against a plain loop of `fetch` calls: both send
 * the same 50-event batches, one request at a time, to the same service process, in
 * interleaved rounds; the ratio of their events/s is the client's cost. Then the memory of
 * a client holding a full queue (10,000 events), on Bun and on Node.js.
 *
 *   bun bench/client.ts                     the service on embedded PGlite in a temp dir
 *   DATABASE_URL=postgres://… bun bench/client.ts
 *   ROUNDS=5 EVENTS=10000 bun bench/client.ts
 *
 * Self-contained (the other scripts' support may move); results in bench/README.md.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '../clients/node/src/index.ts'

const ROOT = join(import.meta.dir, '..')
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const EVENTS = Number(process.env.EVENTS ?? 10_000)
const BATCH = 50
const ADMIN_TOKEN = 'bench-client-admin-token-0123456789'

/** The service as operators run it; answers its base URL and a stop function. */
async function startService() {
  const dataDir = process.env.DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'kg-bench-client-'))
  const child = Bun.spawn([process.execPath, join(ROOT, 'src/index.ts')], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      ADMIN_TOKEN,
      ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : { DATA_DIR: join(dataDir!, 'data') }),
    },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = child.stdout.getReader()
  let seen = ''
  for (;;) {
    const next = await reader.read()
    if (next.done) throw new Error(`the service exited: ${seen}`)
    seen += new TextDecoder().decode(next.value)
    const port = /listening on http:\/\/localhost:(\d+)/.exec(seen)?.[1]
    if (port) {
      void (async () => {
        while (!(await reader.read()).done) {}
      })()
      return {
        base: `http://127.0.0.1:${port}`,
        async stop() {
          child.kill('SIGTERM')
          await child.exited
          if (dataDir) rmSync(dataDir, { recursive: true, force: true })
        },
      }
    }
  }
}

async function privateKey(base: string): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}/admin/v0${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (response.status !== 201) throw new Error(`${path}: ${response.status} ${await response.text()}`)
    return (await response.json()) as { id: string; key: string }
  }
  const business = await post('/businesses', { name: 'Client bench' })
  const { key } = await post(`/businesses/${business.id}/keys`, {
    type: 'private',
    name: 'bench',
    scopes: ['ANALYTICS_WRITE'],
    rateLimit: { limit: 1_000_000, windowSeconds: 1 },
    createdBy: 'bench',
  })
  return key
}

/** The event both senders send: an order, about 150 bytes of JSON with its id and timestamp. */
function order(i: number) {
  return {
    eventType: 'order_paid',
    personId: `cus_${i % 1000}`,
    properties: { orderId: `ord_${i}`, total: (i % 997) + 0.5, currency: 'EUR' },
  }
}

interface Run {
  /** Events committed a second. */
  rate: number
  /** CPU time of this process (the sender alone: the service is another process), µs an event. */
  cpu: number
}

function measured(events: number, started: number, cpuAtStart: NodeJS.CpuUsage): Run {
  const cpu = process.cpuUsage(cpuAtStart)
  return { rate: events / ((performance.now() - started) / 1000), cpu: (cpu.user + cpu.system) / events }
}

/** A plain loop: each batch built (ids, timestamps, JSON) and sent, awaiting each answer. */
async function plainLoop(base: string, key: string, events: number): Promise<Run> {
  const cpuAtStart = process.cpuUsage()
  const started = performance.now()
  for (let first = 0; first < events; first += BATCH) {
    const batch = []
    for (let i = first; i < Math.min(events, first + BATCH); i++) {
      batch.push({ ...order(i), id: crypto.randomUUID(), timestamp: new Date().toISOString() })
    }
    const response = await fetch(`${base}/api/v0/analytics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: batch }),
    })
    await response.arrayBuffer()
    if (response.status !== 202) throw new Error(`plain loop: ${response.status}`)
  }
  return measured(events, started, cpuAtStart)
}

/** The client: every event tracked, then flushed; its batches of 50 go one at a time. */
async function withClient(base: string, key: string, events: number): Promise<Run> {
  const client = createClient({ key, baseUrl: base, batchSize: BATCH, onError: (failure) => console.error('client dropped', failure) })
  const cpuAtStart = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < events; i++) client.track(order(i))
  await client.flush()
  const run = measured(events, started, cpuAtStart)
  const stats = client.stats()
  if (stats.committed !== events || stats.dropped !== 0) throw new Error(`client: ${JSON.stringify(stats)}`)
  return run
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** Heap held by a client whose 10,000 events cannot leave (its fetch never answers), measured in a fresh process. */
const MEMORY_PROBE = `
const { createClient } = await import(process.env.CLIENT_MODULE)
const gc = globalThis.Bun ? () => Bun.gc(true) : globalThis.gc
const heap = () => { gc(); gc(); return process.memoryUsage().heapUsed }
const never = () => new Promise(() => {})
const order = (i) => ({ eventType: 'order_paid', personId: 'cus_' + (i % 1000), properties: { orderId: 'ord_' + i, total: (i % 997) + 0.5, currency: 'EUR' } })
const before = heap()
const client = createClient({ key: 'sk_' + 'a'.repeat(32), baseUrl: 'http://127.0.0.1:9', fetch: never, timeoutMs: 3600000, onError: () => {} })
for (let i = 0; i < 10000; i++) client.track(order(i))
const after = heap()
const json = JSON.stringify({ ...order(5000), id: '0190f1e2-7a3b-7c4d-8e5f-a0b1c2d3e4f5', timestamp: new Date().toISOString() })
console.log(JSON.stringify({ queued: client.stats().queued, bytes: after - before, eventJson: json.length }))
process.exit(0)
`

async function memoryOn(runtime: 'bun' | 'node'): Promise<{ queued: number; bytes: number; eventJson: number }> {
  const module = runtime === 'bun' ? join(ROOT, 'clients/node/src/index.ts') : join(ROOT, 'clients/node/dist/index.js')
  const command =
    runtime === 'bun' ? [process.execPath, '-e', MEMORY_PROBE] : ['node', '--expose-gc', '--input-type=module', '-e', MEMORY_PROBE]
  const child = Bun.spawn(command, { env: { PATH: process.env.PATH ?? '', CLIENT_MODULE: module }, stdout: 'pipe', stderr: 'inherit' })
  const output = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error(`${runtime} memory probe failed: ${output}`)
  return JSON.parse(output)
}

async function main() {
  console.log(
    `bun ${Bun.version}, node ${Bun.spawnSync(['node', '--version']).stdout.toString().trim()}, ${cpus().length} cores (${cpus()[0]?.model}), load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
  console.log(
    `engine: ${process.env.DATABASE_URL ? 'PostgreSQL' : 'embedded PGlite'}; ${ROUNDS} rounds of ${EVENTS} events each way, batches of ${BATCH}, interleaved`,
  )
  const service = await startService()
  try {
    const key = await privateKey(service.base)
    await plainLoop(service.base, key, 2000) // warm-up: the service's caches, the JIT, both paths
    await withClient(service.base, key, 2000)
    const plain: Run[] = []
    const client: Run[] = []
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so that a drift of the machine falls on both.
      const order = round % 2 === 0 ? (['plain', 'client'] as const) : (['client', 'plain'] as const)
      for (const who of order) {
        if (who === 'plain') plain.push(await plainLoop(service.base, key, EVENTS))
        else client.push(await withClient(service.base, key, EVENTS))
      }
      const [p, c] = [plain.at(-1)!, client.at(-1)!]
      console.log(
        `round ${round + 1}: plain fetch loop ${p.rate.toFixed(0)} events/s (${p.cpu.toFixed(1)} µs CPU an event), client ${c.rate.toFixed(0)} events/s (${c.cpu.toFixed(1)} µs)`,
      )
    }
    const rates = (runs: Run[]) => runs.map((r) => r.rate)
    const ratio = median(rates(client)) / median(rates(plain))
    console.log(`\n| sender | median events/s | sender's CPU, µs an event (median) | events/s of each round |\n|---|---|---|---|`)
    for (const [name, runs] of [
      ['plain fetch loop', plain],
      ['@keygate/client', client],
    ] as const) {
      console.log(
        `| ${name} | ${median(rates(runs)).toFixed(0)} | ${median(runs.map((r) => r.cpu)).toFixed(1)} | ${rates(runs)
          .map((r) => r.toFixed(0))
          .join(', ')} |`,
      )
    }
    console.log(`\nclient / plain loop: ${ratio.toFixed(3)} (aim: at least 0.90)`)
  } finally {
    await service.stop()
  }

  if (!(await Bun.file(join(ROOT, 'clients/node/dist/index.js')).exists())) {
    Bun.spawnSync(['npm', 'run', 'build', '-w', '@keygate/client'], { cwd: ROOT, stdout: 'inherit', stderr: 'inherit' })
  }
  for (const runtime of ['bun', 'node'] as const) {
    const memory = await memoryOn(runtime)
    console.log(
      `memory, ${runtime}: a full queue of ${memory.queued} events holds ${(memory.bytes / 1024 / 1024).toFixed(1)} MiB of heap (${Math.round(memory.bytes / memory.queued)} bytes an event; an event is ${memory.eventJson} bytes of JSON)`,
    )
  }
}

await main()
