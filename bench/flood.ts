/**
 * `bun run bench:flood`: is one business safe from another's flood?
 *
 * A copied public key floods `POST /api/v0/analytics` from one address with 500-event
 * batches over 256 connections (wrk, on core 1), while a second business posts one event
 * every 20 ms with its private key (this script, fetch). The flooding key is given a
 * budget that never refuses (1000000 per second), so what protects the second business is
 * the ingest queue's bounds and fairness alone, not the rate limiter (BENCH_LIMITER=default
 * keeps the default per-visitor budget instead, as a deployment would). Prints the second
 * business's answers by status, p50/p99 latency, its rows stored, the flood's answers, and
 * the service's peak memory (VmHWM).
 *
 * Aim (issue 7): every one of the second business's requests answered 202 and stored, its
 * p99 under 250 ms, peak memory under 512 MiB.
 *
 * Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench, created
 * when missing), BENCH_SECONDS (flood length, default 10), COMPARE_TREES (comma-separated
 * checkouts measured the same way in the same run, the trees and this one taking turns),
 * BENCH_REPETITIONS (rounds of turns, default 1), BENCH_SLOWEST=1 (also when the second
 * business's eight slowest requests were sent: a stall shows as a run of neighbours).
 */
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { databaseUrl, ensureDatabase, killOnExit, onCore, pinned, root, runBenchmark, startService, wrkVersion } from './support.ts'

const SECONDS = Number(process.env.BENCH_SECONDS || 10)
/** BENCH_LIMITER=default: the flooding key keeps the default per-visitor budget (300/60). */
const WITH_LIMITER = process.env.BENCH_LIMITER === 'default'
const TREES = [root, ...(process.env.COMPARE_TREES ?? '').split(',').filter((tree) => tree !== '')]
const REPETITIONS = Number(process.env.BENCH_REPETITIONS || 1)
const ORIGIN = 'https://www.example.com'
const SHOW_SLOWEST = process.env.BENCH_SLOWEST === '1'

const FLOOD_SCRIPT = `
wrk.method = "POST"
wrk.body = os.getenv("WRK_BODY")
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) s202, s429, s503, other = 0, 0, 0, 0 end
function response(status)
  if status == 202 then s202 = s202 + 1
  elseif status == 429 then s429 = s429 + 1
  elseif status == 503 then s503 = s503 + 1
  else other = other + 1 end
end
function done(summary, latency, requests)
  local t = { s202 = 0, s429 = 0, s503 = 0, other = 0 }
  for _, thread in ipairs(threads) do
    for name, _ in pairs(t) do t[name] = t[name] + thread:get(name) end
  end
  io.write(string.format("FLOOD 202=%d 429=%d 503=%d other=%d\\n", t.s202, t.s429, t.s503, t.other))
end
`

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN
}

function peakMemoryMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  return kb / 1024
}

interface FloodRun {
  tree: string
  floodRequestsPerSecond: number
  floodAnswers: string
  sent: number
  answers: string
  p50: number
  p99: number
  stored: number
  accepted: number
  peakMiB: number
  /** The second business's slowest requests: when each was sent (ms after the first) and how long it took. */
  slowest: { sentAt: number; ms: number }[]
}

/** Each tree on a database of its own: an older tree must not meet a newer one's migrations. */
function databaseOf(tree: string): string {
  if (tree === root) return databaseUrl
  const url = new URL(databaseUrl)
  url.pathname = `${url.pathname}_${Bun.hash(tree).toString(36)}`
  return url.toString()
}

/** One flood against the service of `tree`, started for it and stopped after. */
async function floodOnce(tree: string, batchFile: string, script: string): Promise<FloodRun> {
  const database = databaseOf(tree)
  await ensureDatabase(database)
  const service = await startService({ cwd: tree, env: { DATABASE_URL: database } })
  const runId = crypto.randomUUID().slice(0, 8)
  const flooder = await service.admin.createBusiness(`flooder ${runId}`)
  const shop = await service.admin.createBusiness(`shop ${runId}`)
  const floodKey = await service.admin.createKey(
    flooder,
    'copied public key',
    WITH_LIMITER ? {} : { rateLimit: { limit: 1_000_000, windowSeconds: 1 } },
  )
  const shopKey = await service.admin.createKey(shop, 'backend', { type: 'private', allowedOrigins: [], scopes: ['ANALYTICS_WRITE'] })
  const wrk = killOnExit(
    Bun.spawn(
      onCore(1, [
        'wrk',
        '-t1',
        '-c256',
        `-d${SECONDS}s`,
        '--timeout',
        '30s',
        '-s',
        script,
        '-H',
        `authorization: Bearer ${floodKey}`,
        '-H',
        `origin: ${ORIGIN}`,
        '-H',
        'content-type: application/json',
        `${service.base}/api/v0/analytics`,
      ]),
      { env: { ...process.env, WRK_BODY: readFileSync(batchFile, 'utf8') }, stdout: 'pipe', stderr: 'inherit' },
    ),
  )

  // The second business: one event every 20 ms, each request timed on its own.
  await Bun.sleep(1_000) // let the flood build up first
  const latencies: number[] = []
  const timeline: { sentAt: number; ms: number }[] = []
  const firstSent = performance.now()
  const answers = new Map<number | string, number>()
  const pending: Promise<void>[] = []
  const until = performance.now() + (SECONDS - 2) * 1000
  for (let i = 0; performance.now() < until; i++) {
    const started = performance.now()
    pending.push(
      fetch(`${service.base}/api/v0/analytics`, {
        method: 'POST',
        headers: { authorization: `Bearer ${shopKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ eventType: 'order', properties: { i } }),
        signal: AbortSignal.timeout(30_000),
      })
        .then(async (response) => {
          await response.arrayBuffer()
          latencies.push(performance.now() - started)
          timeline.push({ sentAt: started - firstSent, ms: performance.now() - started })
          answers.set(response.status, (answers.get(response.status) ?? 0) + 1)
        })
        .catch((error: Error) => void answers.set(error.name, (answers.get(error.name) ?? 0) + 1)),
    )
    await Bun.sleep(Math.max(0, started + 20 - performance.now()))
  }
  await Promise.all(pending)
  const floodOutput = await new Response(wrk.stdout).text()
  await wrk.exited
  const peakMiB = peakMemoryMiB(service.process.pid)
  service.process.kill()
  await service.process.exited

  const sql = postgres(database, { max: 1, onnotice: () => {} })
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from analytics_events where business_id = ${shop}`
  await sql.end({ timeout: 5 })
  latencies.sort((a, b) => a - b)
  return {
    tree,
    floodRequestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(floodOutput)?.[1] ?? Number.NaN),
    floodAnswers: /FLOOD (.*)/.exec(floodOutput)?.[1] ?? '(no summary)',
    sent: [...answers.values()].reduce((a, b) => a + b, 0),
    answers: [...answers].map(([status, n]) => `${status}=${n}`).join(' '),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    stored: row!.n,
    accepted: answers.get(202) ?? 0,
    peakMiB,
    slowest: timeline.sort((a, b) => b.ms - a.ms).slice(0, 8),
  }
}

await runBenchmark(async () => {
  if (Bun.which('wrk') === null) {
    console.error('wrk is missing: apt-get install -y wrk')
    return 1
  }
  await ensureDatabase(databaseUrl)
  console.log(
    `flood benchmark: ${wrkVersion()}, bun ${Bun.version}, ${cpus().length} cores (${cpus()[0]?.model}), pinned: ${pinned}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
  console.log(
    `flooding key's budget: ${WITH_LIMITER ? 'the default per visitor (300/60)' : 'never refuses (1000000/1)'}; one address, 256 connections, 500-event batches, ${SECONDS} s; the second business posts 1 event / 20 ms with a private key`,
  )
  const dir = mkdtempSync(join(tmpdir(), 'keygate-flood-'))
  const script = join(dir, 'flood.lua')
  writeFileSync(script, FLOOD_SCRIPT)
  const batchFile = join(dir, 'batch.json')
  writeFileSync(
    batchFile,
    JSON.stringify({
      events: Array.from({ length: 500 }, (_, i) => ({
        eventType: 'page_view',
        url: `https://www.example.com/articles/${i}`,
        properties: { campaign: 'flood', i },
      })),
    }),
  )
  const runs: FloodRun[] = []
  try {
    for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
      for (const tree of TREES) {
        const run = await floodOnce(tree, batchFile, script)
        runs.push(run)
        console.log(
          `${repetition}/${REPETITIONS} ${tree}: flood ${run.floodRequestsPerSecond.toFixed(0)} req/s (${run.floodAnswers}); second business ${run.sent} sent (${run.answers}), p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms, ${run.stored} stored; peak ${run.peakMiB.toFixed(0)} MiB`,
        )
        if (SHOW_SLOWEST) {
          console.log(
            `  slowest (sent at s: ms): ${run.slowest.map((s) => `${(s.sentAt / 1000).toFixed(2)}: ${s.ms.toFixed(0)}`).join(', ')}`,
          )
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  console.log('\n| Tree | flood req/s | flood answers | second business: p99 | 202 / sent | stored | peak memory |')
  console.log('|---|---|---|---|---|---|---|')
  for (const run of runs) {
    console.log(
      `| ${run.tree} | ${run.floodRequestsPerSecond.toFixed(0)} | ${run.floodAnswers} | ${run.p99.toFixed(0)} ms | ${run.accepted} / ${run.sent} | ${run.stored} | ${run.peakMiB.toFixed(0)} MiB |`,
    )
  }
  const mine = runs.filter((run) => run.tree === root)
  const met = mine.every((run) => run.accepted === run.sent && run.stored === run.accepted && run.p99 < 250 && run.peakMiB < 512)
  console.log(`aim for this tree (all 202 and stored, p99 < 250 ms, peak < 512 MiB): ${met ? 'met' : 'NOT met'}`)
  return 0
})
