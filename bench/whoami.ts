/**
 * `npm run bench`: GET /api/v0/whoami through the whole service (key chain, origin check,
 * budgets, CORS, usage and metrics) on PostgreSQL, against the same request to a bare
 * Elysia route and to the contract's floor, in one run.
 *
 * Load: wrk (Debian's package), 1 thread, 64 connections, 10 s after a 3 s warm-up, the
 * server pinned to core 0 and wrk to core 1, interleaved repetitions (BENCH_REPETITIONS,
 * default 3), medians. Baselines (bench/bare-elysia.ts): the bare route; the contract's
 * native floor (the peer's address, the headers read, the key's SHA-256, the CORS headers
 * and request id); the same floor answered at the end of the event loop's turn
 * (bench/floor-routes.ts), the cheaper form under load. The higher floor is the most any
 * implementation of the contract can reach.
 *
 * BENCH_ROUTE=track: page views (POST /api/v0/analytics, one event) instead, with the
 * service's events going nowhere (bench/service-without-store.ts), against the same
 * baselines with the body read and checked. DATABASE_URL: the PostgreSQL to use (default
 * postgres://postgres@127.0.0.1:5432/bench, created when missing). COMPARE_TREE=<dir>:
 * also measure the service of another checkout (the tree before a change) in the same run.
 * See bench/README.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { cpuSecondsOf, median } from './measure.ts'
import {
  databaseUrl,
  ensureDatabase,
  onCore,
  pinned,
  root,
  runBenchmark,
  startServer,
  startService,
  stopChildren,
  wrkVersion,
} from './support.ts'

/**
 * BENCH_ROUTE=track measures the page-view route instead: POST /api/v0/analytics with one
 * event, through the service with its event store replaced by one that keeps nothing
 * (bench/service-without-store.ts: the chain's share, which is what the bare route can be
 * compared with), against the bare route with the same TypeBox body answering 202.
 */
const TRACK = process.env.BENCH_ROUTE === 'track'
const ROUTE = TRACK
  ? {
      path: '/api/v0/analytics',
      method: 'POST',
      body: '{"eventType":"page_view","url":"https://www.example.com/pricing","anonymousId":"visitor-1"}',
      status: 202,
      answer: '"accepted":1',
      name: '`POST /api/v0/analytics`, 1 event',
      label: 'keygate page view: key chain + origin + CORS + body, event store off',
    }
  : {
      path: '/api/v0/whoami',
      method: 'GET',
      body: undefined,
      status: 200,
      answer: '"keyType":"public"',
      name: '`GET /api/v0/whoami`',
      label: 'keygate whoami: key chain + origin + CORS, PostgreSQL',
    }

const CONNECTIONS = 64
const WARMUP_SECONDS = 3
const DURATION_SECONDS = 10
const REPETITIONS = Number(process.env.BENCH_REPETITIONS || 3)
const ORIGIN = 'https://www.example.com'

interface Target {
  label: string
  /** Text the answer must hold, when it is not the route's. */
  answer?: string
  process: Bun.Subprocess
  url: string
  headers: Record<string, string>
}

interface WrkReport {
  requests: number
  durationUs: number
  statusErrors: number
  connectErrors: number
  readErrors: number
  writeErrors: number
  timeouts: number
  p50Us: number
  p99Us: number
  maxUs: number
}

interface Measurement extends WrkReport {
  requestsPerSecond: number
  /** CPU time of the server process (user + system) per request, µs; null off Linux. */
  cpuUsPerRequest: number | null
}

async function main(): Promise<number> {
  const wrk = Bun.which('wrk')
  if (!wrk) {
    console.error('wrk is not installed: `apt-get install -y wrk` (Debian/Ubuntu), then run `bun run bench` again.')
    return 1
  }
  await ensureDatabase(databaseUrl)
  const service = await startService(TRACK ? { entry: 'bench/service-without-store.ts' } : {})
  // A budget that never refuses (1000000 a second), so the limiter counts every request but refuses none.
  const unlimited = { rateLimit: { limit: 1_000_000, windowSeconds: 1 } }
  const business = await service.admin.createBusiness('bench')
  const key = await service.admin.createKey(business, 'bench', unlimited)
  const bare = await startServer(onCore(0, [process.execPath, 'bench/bare-elysia.ts']), { PORT: '0' })
  const bareFloor = await startServer(onCore(0, [process.execPath, 'bench/bare-elysia.ts']), { PORT: '0', FLOOR: '1' })
  const floorAtTurnEnd = await startServer(onCore(0, [process.execPath, 'bench/bare-elysia.ts']), { PORT: '0', FLOOR_AT_TURN_END: '1' })

  // The same request to every target: the bare route ignores the headers.
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, origin: ORIGIN }
  if (TRACK) headers['content-type'] = 'application/json'
  const targets: Target[] = [
    { label: ROUTE.label, process: service.process, url: `${service.base}${ROUTE.path}`, headers },
    { label: 'bare Elysia route', process: bare.process, url: `${bare.base}${ROUTE.path}`, headers },
    {
      label: "bare Elysia route + the contract's native floor (peer's address, headers read, SHA-256, CORS headers and request id)",
      process: bareFloor.process,
      url: `${bareFloor.base}${ROUTE.path}`,
      headers,
    },
    {
      label: "the contract's native floor, answered at the end of the event loop's turn",
      process: floorAtTurnEnd.process,
      url: `${floorAtTurnEnd.base}${ROUTE.path}`,
      headers,
    },
  ]
  if (!TRACK) {
    // The same service, its whoami answered once more through the key chain's Elysia plugin
    // (bench/service-plugin-whoami.ts): what the direct route saves (docs/architecture.md, "The hot routes").
    const plugin = await startService({ entry: 'bench/service-plugin-whoami.ts' })
    targets.push({
      label: "keygate whoami through the key chain's Elysia plugin",
      answer: '"keyType":"public"',
      process: plugin.process,
      url: `${plugin.base}/api/v0/whoami-through-plugin`,
      headers,
    })
  }
  // Variants share the database (and so the key) of the service above.
  const compareTree = process.env.COMPARE_TREE
  if (compareTree) {
    // The same entry as this tree's service: for page views, the one whose events go nowhere.
    const other = await startService({ cwd: compareTree, entry: TRACK ? 'bench/service-without-store.ts' : undefined })
    targets.push({ label: `keygate at ${compareTree}`, process: other.process, url: `${other.base}${ROUTE.path}`, headers })
  }

  const context = [
    `date: ${new Date().toISOString()}`,
    `bun ${Bun.version}, ${wrkVersion()}`,
    `cpu: ${cpus()[0]?.model ?? 'unknown'} x${cpus().length}; pinned: ${pinned ? 'server core 0, wrk core 1' : 'no (taskset missing or one core)'}`,
    `load average at start: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
    `wrk -t1 -c${CONNECTIONS} -d${DURATION_SECONDS}s after a ${WARMUP_SECONDS} s warm-up, ${REPETITIONS} interleaved repetitions, medians`,
  ]
  console.log(context.join('\n'))

  const results = new Map<Target, Measurement[]>(targets.map((t) => [t, []]))
  const raw: string[] = []
  let invalid = false
  try {
    for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
      for (const target of targets) {
        await expectOk(target)
        await runWrk(target, WARMUP_SECONDS)
        const cpuBefore = cpuSecondsOf([target.process.pid])
        const { report, text } = await runWrk(target, DURATION_SECONDS)
        const cpuAfter = cpuSecondsOf([target.process.pid])
        await expectOk(target)
        raw.push(`## ${target.label}, repetition ${repetition}\n${text}`)
        const measurement: Measurement = {
          ...report,
          requestsPerSecond: report.requests / (report.durationUs / 1e6),
          cpuUsPerRequest: cpuBefore !== null && cpuAfter !== null ? ((cpuAfter - cpuBefore) * 1e6) / report.requests : null,
        }
        results.get(target)!.push(measurement)
        const errors = failures(report)
        if (errors > 0) invalid = true
        console.log(
          `  ${repetition}/${REPETITIONS} ${target.label}: ${Math.round(measurement.requestsPerSecond)} req/s, ` +
            `p99 ${(report.p99Us / 1000).toFixed(2)} ms${errors > 0 ? `, ${errors} FAILED ANSWERS` : ''}`,
        )
      }
    }
  } finally {
    // Stop the servers before printing: nothing else should compete for the cores.
    stopChildren()
  }

  const summaries = targets.map((t) => summarise(results.get(t)!))
  const [keygate, baseline] = summaries
  const ratio = keygate!.requestsPerSecond / baseline!.requestsPerSecond
  const table = [
    `| Server, ${ROUTE.name} | req/s (median) | p99 (median) | CPU per request | req/s of each run | failed answers |`,
    '|---|---|---|---|---|---|',
    ...targets.map((target, i) => {
      const summary = summaries[i]!
      const runs = results.get(target)!
      return `| ${target.label} | ${format(summary.requestsPerSecond)} | ${(summary.p99Us / 1000).toFixed(2)} ms | ${
        summary.cpuUsPerRequest === null ? 'n/a' : `${summary.cpuUsPerRequest.toFixed(1)} µs`
      } | ${runs.map((r) => format(r.requestsPerSecond)).join(', ')} | ${runs.reduce((n, r) => n + failures(r), 0)} |`
    }),
  ]
  const summaryText = [
    '',
    ...table,
    '',
    `${TRACK ? 'page view' : 'whoami'} with auth and CORS / bare Elysia route: ${ratio.toFixed(2)}; p99: ${(
      keygate!.p99Us / baseline!.p99Us
    ).toFixed(2)}x the bare route's`,
    ...(keygate!.cpuUsPerRequest !== null && baseline!.cpuUsPerRequest !== null
      ? [
          `CPU per request, bare Elysia route / ${TRACK ? 'page view' : 'whoami'}: ${(baseline!.cpuUsPerRequest / keygate!.cpuUsPerRequest).toFixed(2)}` +
            " (the req/s ratio to expect when the server's core is the limit; steadier on a busy machine)",
        ]
      : []),
    `bare Elysia route + the contract's native floor / bare Elysia route: ${(
      summaries[2]!.requestsPerSecond / baseline!.requestsPerSecond
    ).toFixed(2)} (the most any implementation of the contract can reach)`,
    `${TRACK ? 'page view' : 'whoami'} / the floor: ${(keygate!.requestsPerSecond / summaries[2]!.requestsPerSecond).toFixed(2)}; p99 ${(
      keygate!.p99Us / summaries[2]!.p99Us
    ).toFixed(2)}x the floor's (the contract's aim: 0.9, p99 at most 1.5x)`,
    `${TRACK ? 'page view' : 'whoami'} / the floor answered at the turn's end: ${(
      keygate!.requestsPerSecond / summaries[3]!.requestsPerSecond
    ).toFixed(2)} (the floor in the form that is cheaper under load)`,
    ...targets.slice(4).map((target, i) => {
      const variant = summaries[i + 4]!
      const cpu =
        variant.cpuUsPerRequest !== null && keygate!.cpuUsPerRequest !== null
          ? `, CPU per request ${(variant.cpuUsPerRequest - keygate!.cpuUsPerRequest).toFixed(1)} µs against keygate`
          : ''
      return `${target.label} / keygate: ${(variant.requestsPerSecond / keygate!.requestsPerSecond).toFixed(2)} req/s${cpu}`
    }),
    ...(invalid ? ['', 'INVALID: some answers failed (status >= 400 or socket errors); the numbers above do not count.'] : []),
  ].join('\n')
  console.log(summaryText)

  const resultsDir = join(root, 'bench', 'results')
  mkdirSync(resultsDir, { recursive: true })
  const rawFile = join(resultsDir, `${TRACK ? 'track' : 'whoami'}-${new Date().toISOString().replace(/[:.]/g, '-')}.raw`)
  writeFileSync(rawFile, [...context, '', ...raw, summaryText, ''].join('\n'))
  console.log(`\nraw wrk output: ${rawFile}`)
  return invalid ? 1 : 0
}

/** One request that must answer exactly as the route does when granted: a fast error path must not pass for speed. */
async function expectOk(target: Target): Promise<void> {
  const response = await fetch(target.url, { method: ROUTE.method, headers: target.headers, body: ROUTE.body })
  const body = await response.text()
  if (response.status !== ROUTE.status || !body.includes(target.answer ?? ROUTE.answer)) {
    throw new Error(`${target.label} answered ${response.status}: ${body}`)
  }
}

async function runWrk(target: Target, seconds: number) {
  const headerArgs = Object.entries(target.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`])
  const command = onCore(1, [
    'wrk',
    '-t1',
    `-c${CONNECTIONS}`,
    `-d${seconds}s`,
    '--latency',
    '-s',
    join(root, 'bench', 'wrk-report.lua'),
    ...headerArgs,
    target.url,
  ])
  const text = await output(command, TRACK ? { WRK_METHOD: ROUTE.method, WRK_BODY: ROUTE.body! } : {})
  const line = text.split('\n').find((l) => l.startsWith('{"requests"'))
  if (!line) throw new Error(`wrk printed no report:\n${text}`)
  return { report: JSON.parse(line) as WrkReport, text }
}

async function output(command: string[], env: Record<string, string> = {}): Promise<string> {
  const child = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...env } })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`${command.join(' ')} exited ${code}: ${stderr}`)
  return stdout + stderr
}

function summarise(runs: Measurement[]) {
  return {
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p99Us: median(runs.map((r) => r.p99Us)),
    cpuUsPerRequest: runs.some((r) => r.cpuUsPerRequest === null) ? null : median(runs.map((r) => r.cpuUsPerRequest!)),
  }
}

function failures(r: WrkReport): number {
  return r.statusErrors + r.connectErrors + r.readErrors + r.writeErrors + r.timeouts
}

function format(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

await runBenchmark(main)
