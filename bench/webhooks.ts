/**
 * `bun bench/webhooks.ts`: does a webhook receiver that never answers slow the API? whoami
 * under wrk (64 connections, 10 s after a 3 s warm-up) while an operator's loop creates keys
 * (each a `key.created` event), with the business's endpoint pointing at a receiver on
 * loopback that holds every request open, against the same with the endpoint disabled (no
 * deliveries at all), interleaved, BENCH_REPETITIONS (3) times; medians. The service is
 * src/index.ts on PostgreSQL (DATABASE_URL, default .../bench), pinned to core 0.
 */
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { median } from './measure.ts'
import {
  ALLOWED_ORIGIN,
  databaseUrl,
  ensureDatabase,
  onCore,
  root,
  runBenchmark,
  startService,
  stopChildren,
  wrkVersion,
} from './support.ts'

const REPETITIONS = Number(process.env.BENCH_REPETITIONS || 3)
const SECONDS = 10
const EVENTS_PER_SECOND = 20

interface Report {
  requests: number
  durationUs: number
  p99Us: number
  statusErrors: number
  connectErrors: number
  readErrors: number
  writeErrors: number
  timeouts: number
}

async function main(): Promise<number> {
  await ensureDatabase(databaseUrl)
  const held: (() => void)[] = []
  let heldRequests = 0
  const hanging = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: () => {
      heldRequests++
      return new Promise<Response>((resolve) => held.push(() => resolve(new Response('late'))))
    },
  })
  const service = await startService({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } })
  const business = await service.admin.createBusiness('bench webhooks')
  // A budget that never refuses: the limiter counts every request but refuses none.
  const key = await service.admin.createKey(business, 'whoami', { rateLimit: { limit: 1_000_000, windowSeconds: 1 } })
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${service.base}/admin/v0${path}`, {
      method,
      headers: { authorization: `Bearer ${service.adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const created = await admin('POST', `/businesses/${business}/webhooks`, {
    url: `http://127.0.0.1:${hanging.port}/hooks`,
    events: ['key.created'],
  })
  if (created.status !== 201) throw new Error(`the endpoint was not created: ${created.status} ${await created.text()}`)
  const endpoint = ((await created.json()) as { id: string }).id

  /** Keys created at EVENTS_PER_SECOND until `stop`: the events the service must tell. */
  async function generate(stop: { done: boolean }): Promise<number> {
    let made = 0
    while (!stop.done) {
      const started = performance.now()
      await admin('POST', `/businesses/${business}/keys`, {
        type: 'private',
        name: `event ${made}`,
        scopes: ['ANALYTICS_READ'],
        createdBy: 'bench',
      })
      made++
      await Bun.sleep(Math.max(0, 1000 / EVENTS_PER_SECOND - (performance.now() - started)))
    }
    return made
  }

  async function wrk(seconds: number): Promise<Report> {
    const command = onCore(1, [
      'wrk',
      '-t1',
      '-c64',
      `-d${seconds}s`,
      '--latency',
      '-s',
      join(root, 'bench', 'wrk-report.lua'),
      '-H',
      `authorization: Bearer ${key}`,
      '-H',
      `origin: https://www.${ALLOWED_ORIGIN}`,
      `${service.base}/api/v0/whoami`,
    ])
    const child = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe' })
    const [stdout] = await Promise.all([new Response(child.stdout).text(), child.exited])
    const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'))
    if (!line) throw new Error(`wrk printed no report:\n${stdout}`)
    return JSON.parse(line) as Report
  }

  const phases = [
    { name: 'endpoint disabled (no deliveries)', enabled: false },
    { name: 'endpoint enabled, its receiver never answers', enabled: true },
  ]
  const results = new Map<string, { rps: number; p99: number; events: number }[]>(phases.map((p) => [p.name, []]))
  console.log(
    `date: ${new Date().toISOString()}\n${wrkVersion()}\nload average at start: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  )
  let invalid = false
  try {
    for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
      for (const phase of phases) {
        await admin('PATCH', `/businesses/${business}/webhooks/${endpoint}`, { enabled: phase.enabled })
        const stop = { done: false }
        const generating = generate(stop)
        await wrk(3)
        const report = await wrk(SECONDS)
        stop.done = true
        const events = await generating
        const failed = report.statusErrors + report.connectErrors + report.readErrors + report.writeErrors + report.timeouts
        if (failed > 0) invalid = true
        const rps = report.requests / (report.durationUs / 1e6)
        results.get(phase.name)!.push({ rps, p99: report.p99Us / 1000, events })
        console.log(
          `  ${repetition}/${REPETITIONS} ${phase.name}: ${Math.round(rps)} req/s, p99 ${(report.p99Us / 1000).toFixed(2)} ms, ${events} events${failed ? `, ${failed} FAILED` : ''}`,
        )
      }
    }
  } finally {
    for (const release of held) release()
    hanging.stop(true)
    stopChildren()
  }
  console.log('\n| whoami while keys are created | req/s (median) | p99 (median) | events generated per run |\n|---|---|---|---|')
  const medians = phases.map((phase) => {
    const runs = results.get(phase.name)!
    const summary = { rps: median(runs.map((r) => r.rps)), p99: median(runs.map((r) => r.p99)), events: median(runs.map((r) => r.events)) }
    console.log(`| ${phase.name} | ${Math.round(summary.rps).toLocaleString('en')} | ${summary.p99.toFixed(2)} ms | ${summary.events} |`)
    return summary
  })
  console.log(
    `\nwith the hanging receiver / without: req/s ${(medians[1]!.rps / medians[0]!.rps).toFixed(2)}, p99 ${(medians[1]!.p99 / medians[0]!.p99).toFixed(2)}x; requests the receiver held: ${heldRequests}`,
  )
  if (invalid) console.log('INVALID: some answers failed')
  return invalid ? 1 : 0
}

await runBenchmark(main)
