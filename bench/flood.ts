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
 * when missing), BENCH_SECONDS (flood length, default 10).
 */
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { databaseUrl, ensureDatabase, killOnExit, onCore, pinned, runBenchmark, startService, wrkVersion } from './support.ts'

const SECONDS = Number(process.env.BENCH_SECONDS || 10)
/** BENCH_LIMITER=default: the flooding key keeps the default per-visitor budget (300/60). */
const WITH_LIMITER = process.env.BENCH_LIMITER === 'default'
const ORIGIN = 'https://www.example.com'

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
  const service = await startService()
  const runId = crypto.randomUUID().slice(0, 8)
  const flooder = await service.admin.createBusiness(`flooder ${runId}`)
  const shop = await service.admin.createBusiness(`shop ${runId}`)
  const floodKey = await service.admin.createKey(
    flooder,
    'copied public key',
    WITH_LIMITER ? {} : { rateLimit: { limit: 1_000_000, windowSeconds: 1 } },
  )
  const shopKey = await service.admin.createKey(shop, 'backend', { type: 'private', allowedOrigins: [], scopes: ['ANALYTICS_WRITE'] })

  const batch = JSON.stringify({
    events: Array.from({ length: 500 }, (_, i) => ({
      eventType: 'page_view',
      url: `https://www.example.com/articles/${i}`,
      properties: { campaign: 'flood', i },
    })),
  })
  const dir = mkdtempSync(join(tmpdir(), 'keygate-flood-'))
  const script = join(dir, 'flood.lua')
  writeFileSync(script, FLOOD_SCRIPT)
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
      { env: { ...process.env, WRK_BODY: batch }, stdout: 'pipe', stderr: 'inherit' },
    ),
  )

  // The second business: one event every 20 ms, each request timed on its own.
  await Bun.sleep(1_000) // let the flood build up first
  const latencies: number[] = []
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
          answers.set(response.status, (answers.get(response.status) ?? 0) + 1)
        })
        .catch((error: Error) => void answers.set(error.name, (answers.get(error.name) ?? 0) + 1)),
    )
    await Bun.sleep(Math.max(0, started + 20 - performance.now()))
  }
  await Promise.all(pending)
  const floodOutput = await new Response(wrk.stdout).text()
  await wrk.exited
  const peak = peakMemoryMiB(service.process.pid)
  rmSync(dir, { recursive: true, force: true })

  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from analytics_events where business_id = ${shop}`
  const [flood] = await sql<{ n: number }[]>`
    select count(*)::int as n from analytics_events where business_id = ${flooder}`
  await sql.end({ timeout: 5 })

  latencies.sort((a, b) => a - b)
  const sent = [...answers.values()].reduce((a, b) => a + b, 0)
  const accepted = answers.get(202) ?? 0
  const floodLine = /FLOOD (.*)/.exec(floodOutput)?.[1] ?? '(no summary)'
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(floodOutput)?.[1] ?? '?'
  console.log(`\nflooding key's budget: ${WITH_LIMITER ? 'the default per visitor (300/60)' : 'never refuses (1000000/1)'}`)
  console.log(
    `flood (one address, 256 connections, 500-event batches, ${SECONDS} s): ${rps} requests/s; answers ${floodLine}; rows stored ${flood!.n}`,
  )
  console.log(
    `second business (1 event / 20 ms, private key): ${sent} sent; answers ${[...answers].map(([s, n]) => `${s}=${n}`).join(' ')}`,
  )
  console.log(
    `  latency p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(1)} ms`,
  )
  console.log(`  rows stored ${row!.n} (202 answers ${accepted})`)
  console.log(`service peak memory (VmHWM): ${peak.toFixed(0)} MiB`)
  const met = accepted === sent && row!.n === accepted && percentile(latencies, 99) < 250 && peak < 512
  console.log(`aim (all 202 and stored, p99 < 250 ms, peak < 512 MiB): ${met ? 'met' : 'NOT met'}`)
  return 0
})
