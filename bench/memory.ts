/**
 * `bun bench/memory.ts`: the service's memory under a million requests across 100,000
 * distinct keys and 100,000 distinct visitors, and after a minute idle (issue 11).
 *
 * Starts the service on PostgreSQL (DATABASE_URL, default the `bench` database, created
 * when missing) behind a pretend proxy (TRUST_PROXY=127.0.0.1), so each request's
 * X-Forwarded-For is its visitor. Stores 100,000 public keys of one business with one
 * SQL statement (keys `pk_` + md5 of a counter, hashed by PostgreSQL the way the service
 * hashes them), then wrk sends BENCH_REQUESTS (default 1,000,000) requests, each with the
 * next key and the next visitor address: nine whoami for one page view (POST
 * /api/v0/analytics, one event). Each key serves ten requests in a row, then the next;
 * every key is a cache miss on its first use (and again on the next pass over the list,
 * as the cache holds 50,000), every (key, visitor) pair a new rate-limit bucket, every
 * key a usage counter and a lastUsedAt.
 *
 * Prints the service's resident memory (VmRSS) after start-up and a warm-up, right after
 * the run, and after 60 s idle (BENCH_IDLE_SECONDS), its peak (VmHWM), the answers by
 * status, and the bounded structures' sizes as /metrics reports them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { databaseUrl, ensureDatabase, killOnExit, onCore, runBenchmark, startService, stopChildren, wrkVersion } from './support.ts'

const KEYS = 100_000
const REQUESTS = Number(process.env.BENCH_REQUESTS || 1_000_000)
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS || 60)
const ORIGIN = 'https://shop.example.com'
const KEY_SEED = `membench-${Date.now()}`

// Request i uses key i/10 (ten requests in a row per key, as a page's visitors would)
// and visitor i mod 100,000: 100,000 keys, 100,000 visitors, and a new (key, visitor)
// budget at every request of the first million.
const WRK_SCRIPT = `
local keys = {}
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end
function init(args)
  for line in io.lines(os.getenv("KEYS_FILE")) do keys[#keys + 1] = line end
  budget = tonumber(args[1])
  i = (id - 1) * 7919 + tonumber(args[2])
  answered, statuses = 0, {}
  body = '{"eventType":"page_view","url":"https://shop.example.com/p"}'
end
function request()
  i = i + 1
  local key = keys[(math.floor(i / 10) % #keys) + 1]
  local v = i % 100000
  local visitor = "10." .. (math.floor(v / 65536) % 256) .. "." .. (math.floor(v / 256) % 256) .. "." .. (v % 256)
  local headers = { ["authorization"] = "Bearer " .. key, ["origin"] = "${ORIGIN}", ["x-forwarded-for"] = visitor }
  if i % 10 == 0 then
    headers["content-type"] = "application/json"
    return wrk.format("POST", "/api/v0/analytics", headers, body)
  end
  return wrk.format("GET", "/api/v0/whoami", headers)
end
function response(status)
  statuses[status] = (statuses[status] or 0) + 1
  answered = answered + 1
  if answered == budget then
    io.write("DONE\\n")
    io.flush()
  end
end
function done()
  local all = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do all[status] = (all[status] or 0) + count end
  end
  for status, count in pairs(all) do io.write(string.format("STATUS %d %d\\n", status, count)) end
end
`

function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0)
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 }
}

async function main(): Promise<number> {
  const wrk = Bun.which('wrk')
  if (!wrk) {
    console.error('wrk is not installed: `apt-get install -y wrk`, then run `bun bench/memory.ts` again.')
    return 1
  }
  await ensureDatabase(databaseUrl)
  const service = await startService({ env: { TRUST_PROXY: '127.0.0.1' } })
  const business = await service.admin.createBusiness('memory bench')
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  await sql`
    insert into api_keys (business_id, type, name, key_hash, key_hint, public_key, allowed_origins, scopes, created_by)
    select ${business}, 'public', 'memory bench ' || i, encode(sha256(convert_to(k, 'UTF8')), 'hex'),
           'pk_…' || right(k, 4), k, array['example.com'], array['ANALYTICS_WRITE'], 'bench'
    from (select i, 'pk_' || md5(${KEY_SEED} || i) as k from generate_series(1, ${KEYS}) as i) as made`
  const keys = Array.from({ length: KEYS }, (_, i) => `pk_${new Bun.CryptoHasher('md5').update(`${KEY_SEED}${i + 1}`).digest('hex')}`)
  const dir = mkdtempSync(join(tmpdir(), 'keygate-membench-'))
  try {
    const keysFile = join(dir, 'keys.txt')
    const scriptFile = join(dir, 'memory.lua')
    writeFileSync(keysFile, `${keys.join('\n')}\n`)
    writeFileSync(scriptFile, WRK_SCRIPT)
    const pid = service.process.pid
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')
    console.log(`date: ${new Date().toISOString()}; bun ${Bun.version}; ${wrkVersion()}`)
    console.log(`cpu: ${cpus()[0]?.model ?? '?'} x${cpus().length}; load average ${load}`)

    // A short warm-up on a few keys: the figure "at start" is the service ready and warm.
    const warm = await runWrk(wrk, service.base, scriptFile, keysFile, 30, 5000, 50_000_000)
    if (warm.total === 0) throw new Error('the warm-up got no answers (see wrk above)')
    const start = memoryOf(pid)
    console.log(`after start-up and a warm-up (${warm.total} requests): RSS ${start.rssMiB.toFixed(1)} MiB`)

    const began = performance.now()
    const run = await runWrk(wrk, service.base, scriptFile, keysFile, 600, REQUESTS)
    const seconds = (performance.now() - began) / 1000
    const after = memoryOf(pid)
    console.log(
      `after ${run.total.toLocaleString('en')} requests in ${seconds.toFixed(1)} s: RSS ${after.rssMiB.toFixed(1)} MiB, peak ${after.peakMiB.toFixed(1)} MiB`,
    )
    console.log(`answers: ${[...run.statuses].map(([status, count]) => `${status}: ${count}`).join(', ')}`)
    await Bun.sleep(IDLE_SECONDS * 1000)
    const idle = memoryOf(pid)
    console.log(`after ${IDLE_SECONDS} s idle: RSS ${idle.rssMiB.toFixed(1)} MiB, peak ${idle.peakMiB.toFixed(1)} MiB`)
    const metrics = await fetch(`${service.base}/metrics`, { headers: { authorization: `Bearer ${service.adminToken}` } }).then((r) =>
      r.text(),
    )
    for (const line of metrics.split('\n')) if (/^keygate_(key_cache|ingest)/.test(line)) console.log(`  ${line}`)

    console.log('')
    console.log('| | RSS | peak (VmHWM) |')
    console.log('|---|---|---|')
    console.log(`| after start-up and warm-up | ${start.rssMiB.toFixed(0)} MiB | ${start.peakMiB.toFixed(0)} MiB |`)
    console.log(
      `| after ${(REQUESTS / 1e6).toFixed(1)}M requests, ${KEYS.toLocaleString('en')} keys and visitors | ${after.rssMiB.toFixed(0)} MiB | ${after.peakMiB.toFixed(0)} MiB |`,
    )
    console.log(`| after ${IDLE_SECONDS} s idle | ${idle.rssMiB.toFixed(0)} MiB | ${idle.peakMiB.toFixed(0)} MiB |`)
    const bad = [...run.statuses].filter(([status]) => status >= 300).reduce((sum, [, count]) => sum + count, 0)
    if (bad > 0) {
      console.error(`INVALID: ${bad} answers were not 2xx`)
      return 1
    }
    return 0
  } finally {
    await sql`delete from api_keys where business_id = ${business} and created_by = 'bench' and name like 'memory bench %'`.catch(() => {})
    await sql.end({ timeout: 5 })
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Sends `budget` requests (a few in flight beyond it) and returns the answers by status.
 * wrk always runs its whole -d, so the script says DONE once the budget is answered and
 * wrk is interrupted (SIGINT: it then reports as usual); -d only bounds a run that stalls.
 */
async function runWrk(wrk: string, base: string, script: string, keysFile: string, limitSeconds: number, budget: number, offset = 0) {
  const child = killOnExit(
    Bun.spawn(onCore(1, [wrk, '-t1', '-c64', `-d${limitSeconds}s`, '-s', script, base, '--', String(budget), String(offset)]), {
      env: { ...process.env, KEYS_FILE: keysFile },
      stdout: 'pipe',
      stderr: 'inherit',
    }),
  )
  let text = ''
  const decoder = new TextDecoder()
  for await (const chunk of child.stdout) {
    text += decoder.decode(chunk)
    if (text.includes('DONE') && child.signalCode === null && !child.killed) child.kill('SIGINT')
  }
  await child.exited
  const statuses = new Map([...text.matchAll(/STATUS (\d+) (\d+)/g)].map((m) => [Number(m[1]), Number(m[2])] as [number, number]))
  const total = [...statuses.values()].reduce((sum, count) => sum + count, 0)
  return { statuses, total }
}

await runBenchmark(async () => {
  try {
    return await main()
  } finally {
    stopChildren()
  }
})
