/**
 * `bun bench/ingest.ts`: ingestion throughput of `POST /api/v0/analytics` on PostgreSQL at
 * 1, 16 and 128 concurrent connections, with p50/p99 latency, and a check that the events
 * table holds exactly as many rows as wrk got 2xx answers.
 *
 * For each level: a 1 s warm-up measures the rate, then the measured run sends a fixed
 * budget of POSTs sized to last about BENCH_SECONDS (default 2.5), with a key of its own
 * business. The wrk script counts the answers and stops once every POST is answered;
 * requests it sends after the budget are `GET /healthz` (which writes nothing), so no POST
 * is cut off mid-flight and the row count can be compared exactly. wrk itself always runs
 * for its whole `-d`, so this script watches the business's row count and interrupts wrk
 * (SIGINT: wrk then reports as usual) once the budget is stored; events/s is the budget
 * over the time until then. `count(distinct xmin)` tells how many transactions (group
 * commits) wrote the rows.
 *
 * Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench, created
 * when missing),
 * BENCH_SECONDS (measured seconds per level), BENCH_EVENTS (events per request, default 1).
 * Every wait is bounded: a run that never completes its budget ends at its wrk deadline
 * and is reported as such.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { databaseUrl, ensureDatabase, killOnExit, onCore, pinned, runBenchmark, startService, stopChildren, wrkVersion } from './support.ts'

const LEVELS = [1, 16, 128]
const WARMUP_SECONDS = 1
// All requests come from one address: the per-visitor budget (contract section 8) is not
// what this measures, so the keys carry one no run reaches.
const UNLIMITED = { rateLimit: { limit: 1_000_000, windowSeconds: 1 } }
const MEASURED_SECONDS = Number(process.env.BENCH_SECONDS || 2.5)
const EVENTS_PER_REQUEST = Math.max(1, Math.min(500, Number(process.env.BENCH_EVENTS || 1)))
const ORIGIN = 'https://shop.example.com'

// Counters are globals so that done() can read them from every thread with thread:get().
const WRK_SCRIPT = `
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  -- wrk calls request() once on the first thread, after init(), to check the script:
  -- that call sends nothing, so it must not count against the budget.
  thread:set("unsent", #threads == 1 and 1 or 0)
end

function init(args)
  budget = tonumber(args[1]) or 0  -- POSTs this thread sends; 0: no limit (warm-up)
  sent, accepted, refused, health = -unsent, 0, 0, 0
  post = wrk.format("POST", nil, nil, os.getenv("WRK_BODY"))
  probe = wrk.format("GET", "/healthz")
end

function request()
  if budget == 0 or sent < budget then
    sent = sent + 1
    return post
  end
  return probe
end

function response(status, headers, body)
  if status == 202 then accepted = accepted + 1
  elseif status == 200 then health = health + 1
  else refused = refused + 1 end
  if budget > 0 and accepted + refused >= budget then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local a, r, h = 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("accepted"); r = r + t:get("refused"); h = h + t:get("health")
  end
  local e = summary.errors
  io.write(string.format(
    '{"durationUs":%d,"accepted":%d,"refused":%d,"health":%d,"socketErrors":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.duration, a, r, h, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`

interface WrkReport {
  durationUs: number
  /** POSTs answered 202. */
  accepted: number
  /** POSTs answered anything else. */
  refused: number
  /** /healthz probes answered while the last POSTs finished. */
  health: number
  socketErrors: number
  p50Us: number
  p99Us: number
}

interface LevelResult {
  connections: number
  report: WrkReport
  budget: number
  /** From starting wrk until the whole budget was stored. */
  seconds: number
  rows: number
  commits: number
}

async function main(): Promise<number> {
  if (!Bun.which('wrk')) {
    console.error('wrk is not installed: `apt-get install -y wrk`, then run `bun bench/ingest.ts` again.')
    return 1
  }
  await ensureDatabase(databaseUrl)
  const workDir = mkdtempSync(join(tmpdir(), 'keygate-ingest-'))
  const script = join(workDir, 'ingest.lua')
  writeFileSync(script, WRK_SCRIPT)
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })

  try {
    const service = await startService()
    const { admin } = service
    const stamp = new Date().toISOString()
    const warmBusiness = await admin.createBusiness(`ingest bench warm-up ${stamp}`)

    const event = { eventType: 'page_view', url: `${ORIGIN}/products/42`, anonymousId: 'anon-bench', properties: { plan: 'pro', n: 1 } }
    const body = JSON.stringify(EVENTS_PER_REQUEST === 1 ? event : { events: Array(EVENTS_PER_REQUEST).fill(event) })

    console.log(
      [
        `date: ${stamp}; bun ${Bun.version}; ${wrkVersion()}`,
        `cpu: ${cpus()[0]?.model ?? 'unknown'} x${cpus().length}; pinned: ${pinned ? 'server core 0, wrk core 1 (PostgreSQL unpinned)' : 'no'}; load average ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}`,
        `POST /api/v0/analytics, ${EVENTS_PER_REQUEST} event(s) per request (${body.length} bytes), wrk -t1, ${WARMUP_SECONDS} s warm-up then ~${MEASURED_SECONDS} s per level`,
      ].join('\n'),
    )

    const results: LevelResult[] = []
    for (const connections of LEVELS) {
      const warmKey = await admin.createKey(warmBusiness, `warm-up c${connections}`, UNLIMITED)
      await expectAccepted(service.base, warmKey, body)
      const warm = await runWrk(script, service.base, warmKey, body, connections, 0, WARMUP_SECONDS)
      // Let the warm-up's cut-off requests finish before the measured run starts.
      await Bun.sleep(300)
      const budget = Math.max(connections * 4, Math.round((warm.report.accepted / (warm.report.durationUs / 1e6)) * MEASURED_SECONDS))
      const businessId = await admin.createBusiness(`ingest bench c${connections} ${stamp}`)
      const key = await admin.createKey(businessId, `measured c${connections}`, UNLIMITED)
      const stored = async () => {
        const [row] = await sql<{ rows: number; commits: number }[]>`
          select count(*)::int as rows, count(distinct xmin::text)::int as commits
          from analytics_events where business_id = ${businessId}::uuid`
        return row!
      }
      // The deadline only matters if the budget never completes (lost answers, a stall).
      const deadline = Math.ceil(MEASURED_SECONDS * 4 + 5)
      const run = await runWrk(script, service.base, key, body, connections, budget, deadline, async () => {
        return (await stored()).rows >= budget * EVENTS_PER_REQUEST
      })
      const { rows, commits } = await stored()
      results.push({ connections, report: run.report, budget, seconds: run.seconds, rows, commits })
      console.log(`  c${connections}: ${run.report.accepted} of ${budget} POSTs answered 202, stored in ${run.seconds.toFixed(2)} s`)
    }

    const table = [
      '| connections | events/s | p50 | p99 | 2xx answers | non-2xx | socket errors | rows stored | rows = 2xx × events | commits | events per commit |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...results.map(({ connections, report, rows, commits, seconds }) => {
        const expected = report.accepted * EVENTS_PER_REQUEST
        const eventsPerSecond = rows / seconds
        return `| ${connections} | ${Math.round(eventsPerSecond).toLocaleString('en-US')} | ${ms(report.p50Us)} | ${ms(report.p99Us)} | ${report.accepted} | ${report.refused} | ${report.socketErrors} | ${rows} | ${rows === expected ? 'yes' : `NO (expected ${expected})`} | ${commits} | ${(rows / Math.max(commits, 1)).toFixed(1)} |`
      }),
    ]
    console.log(['', ...table, ''].join('\n'))
    const consistent = results.every((r) => r.rows === r.report.accepted * EVENTS_PER_REQUEST && r.report.accepted === r.budget)
    if (!consistent) console.log('MISMATCH: some level lost answers or stored a different number of rows; see the table.')
    return consistent ? 0 : 1
  } finally {
    stopChildren()
    await sql.end({ timeout: 5 })
    rmSync(workDir, { recursive: true, force: true })
  }
}

function ms(us: number): string {
  return `${(us / 1000).toFixed(2)} ms`
}

/** One request must answer exactly 202: a fast refusal must not pass for throughput. */
async function expectAccepted(base: string, key: string, body: string): Promise<void> {
  const response = await fetch(`${base}/api/v0/analytics`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, origin: ORIGIN, 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(10_000),
  })
  const text = await response.text()
  if (response.status !== 202) throw new Error(`POST /api/v0/analytics answered ${response.status}: ${text}`)
}

/**
 * Runs wrk against POST /api/v0/analytics. With `finished`, polls it every 50 ms and, once
 * it holds, gives wrk 200 ms to read the last answers and interrupts it; `seconds` is the
 * time from start until `finished` first held (else until wrk exited by itself).
 */
async function runWrk(
  script: string,
  base: string,
  key: string,
  body: string,
  connections: number,
  budget: number,
  seconds: number,
  finished?: () => Promise<boolean>,
): Promise<{ report: WrkReport; seconds: number }> {
  const command = onCore(1, [
    'wrk',
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--timeout',
    '5s',
    '-s',
    script,
    '-H',
    `Authorization: Bearer ${key}`,
    '-H',
    `Origin: ${ORIGIN}`,
    '-H',
    'Content-Type: application/json',
    `${base}/api/v0/analytics`,
    '--',
    String(budget),
  ])
  const started = performance.now()
  // wrk has no body option: the script reads it from the environment.
  const child = killOnExit(Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, WRK_BODY: body } }))
  const text = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  let elapsed: number | null = null
  if (finished) {
    let exited = false
    void child.exited.then(() => (exited = true))
    while (!exited) {
      await Bun.sleep(50)
      if (exited || !(await finished())) continue
      elapsed = (performance.now() - started) / 1000
      await Bun.sleep(200)
      child.kill('SIGINT')
      break
    }
  }
  await child.exited
  const [stdout, stderr] = await text
  const line = stdout.split('\n').find((l) => l.startsWith('{"durationUs"'))
  if (!line) throw new Error(`wrk printed no report:\n${stdout}${stderr}`)
  const report = JSON.parse(line) as WrkReport
  return { report, seconds: elapsed ?? report.durationUs / 1e6 }
}

await runBenchmark(main)
