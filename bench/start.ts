/**
 * How long the service takes to start, and the memory it needs: the first start on an
 * empty database (initdb for the embedded one, every migration, the first business), then
 * a restart on the same database. Each start is timed from the spawn to the first 200 of
 * `/healthz` (the process listens) and of `/readyz` (the database answers), polled every
 * 10 ms, and the process's CPU time (user + system, all threads) up to that `/readyz` is
 * read from /proc: on a shared machine the wall times follow the load, the CPU time much
 * less. Memory: the process's peak resident set by then (VmHWM) and its resident set after
 * IDLE_SECONDS idle (VmRSS): what a container must allow (docs/operations.md, "Memory").
 *
 * With LOAD_SECONDS, the restarted service then takes LOAD_RATE events a second (default
 * 1,000) for that long, tracked by the backend client (clients/node) with a private key
 * made through the admin API: its peak resident set over the load (VmHWM, reset when the
 * load begins) and its steady one (the median of VmRSS sampled every 250 ms over the
 * load's second half). On PostgreSQL, the same for the server's backends that serve the
 * service's connections: their private memory (RssAnon, summed; the shared buffers are
 * the server's, whatever the service does).
 *
 *   bun bench/start.ts                        # this checkout, 5 rounds, the embedded database
 *   ROUNDS=9 bun bench/start.ts . /tmp/before # several checkouts, interleaved round by round
 *   DATABASE_URL=postgres://… ROUNDS=2 LOAD_SECONDS=30 bun bench/start.ts
 *                                             # also on PostgreSQL (interleaved with the embedded
 *                                             # database), each first start on a new database
 *                                             # `<name>_start`, dropped after; under load too
 *
 * A checkout without its own node_modules borrows this one's (a `git worktree` of an older
 * commit, say). Nothing here asserts a time: the figures go to bench/README.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import postgres from 'postgres'
import { createClient } from '../clients/node/src/index.ts'
import { median } from './measure.ts'
import { adminClient, databaseNamed, killOnExit, root, runBenchmark } from './support.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const POLL_MS = 10
const GIVE_UP_MS = 120_000

const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 10)
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 0)
const LOAD_RATE = Number(process.env.LOAD_RATE ?? 1000)
const SAMPLE_MS = 250
const ADMIN_TOKEN = `bench-start-${crypto.randomUUID()}`

type Engine = { name: 'embedded'; url?: undefined } | { name: 'PostgreSQL'; url: string }

const ENGINES: Engine[] = [
  { name: 'embedded' },
  ...(process.env.DATABASE_URL
    ? [{ name: 'PostgreSQL' as const, url: databaseNamed(process.env.DATABASE_URL, `${databaseName(process.env.DATABASE_URL)}_start`) }]
    : []),
]

interface StartTimes {
  healthzMs: number
  readyzMs: number
  cpuMs: number
  /** Peak resident memory up to /readyz, and resident memory after IDLE_SECONDS idle, in MiB. */
  peakMib: number
  idleMib: number
  load?: LoadFigures
}

/** The service's memory under LOAD_RATE events a second, and its PostgreSQL backends' (NaN on the embedded database). */
interface LoadFigures {
  eventsPerSecond: number
  peakMib: number
  steadyMib: number
  backends: number
  backendsPeakMib: number
  backendsSteadyMib: number
}

function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1))
}

/** A line of /proc/<pid>/status in MiB (`VmHWM`: the peak resident set; `VmRSS`: now; `RssAnon`: its private part). */
function memoryMib(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon'): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`))
    return Number(line!.split(/\s+/)[1]) / 1024
  } catch {
    return Number.NaN
  }
}

/** User + system CPU time of a process so far, in ms (Linux; NaN elsewhere). */
function cpuTimeMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    // utime and stime, fields 14 and 15 of the line, in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return Number.NaN
  }
}

/** A port nobody listens on now (the OS's choice, released at once). */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

async function answers200(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) })
    await response.arrayBuffer()
    return response.status === 200
  } catch {
    return false
  }
}

/** A new empty database for a first start on PostgreSQL (any left by an interrupted run goes first). */
async function recreateDatabase(url: string, drop = false): Promise<void> {
  const maintenance = databaseNamed(url, 'postgres')
  const sql = postgres(maintenance, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    const name = `"${databaseName(url).replaceAll('"', '""')}"`
    await sql.unsafe(`drop database if exists ${name}`)
    if (!drop) await sql.unsafe(`create database ${name}`)
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/**
 * LOAD_RATE events a second for LOAD_SECONDS through the backend client, as a backend
 * sends them (batches of the client's default size, one request at a time), while the
 * service's memory is sampled; `database` names the service's PostgreSQL database (its URL), whose
 * backends are sampled too.
 */
async function underLoad(base: string, pid: number, databaseUrl: string | undefined): Promise<LoadFigures> {
  const database = databaseUrl && databaseName(databaseUrl)
  const admin = adminClient(base, ADMIN_TOKEN)
  const business = await admin.createBusiness('memory under load')
  const key = await admin.createKey(business, 'load', {
    type: 'private',
    allowedOrigins: undefined,
    rateLimit: { limit: 1_000_000, windowSeconds: 1 },
  })
  let dropped = 0
  const client = createClient({ baseUrl: base, key, onError: (failure) => (dropped += failure.events.length) })
  const backendsSql = databaseUrl ? postgres(databaseNamed(databaseUrl, 'postgres'), { max: 1, onnotice: () => {} }) : undefined
  const backendPids = async (): Promise<number[]> => {
    if (!backendsSql) return []
    const rows = await backendsSql<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = ${database!} and application_name like 'keygate-%'`
    return rows.map((r) => r.pid)
  }
  const samples: { at: number; rss: number; backends: number; backendCount: number }[] = []
  let backendsPeak = 0
  // Linux: writing 5 to clear_refs resets VmHWM to the resident set now, so VmHWM after the load is the load's peak.
  writeFileSync(`/proc/${pid}/clear_refs`, '5')
  const began = performance.now()
  let tracked = 0
  let sampledAt = 0
  while (performance.now() - began < LOAD_SECONDS * 1000) {
    const due = Math.floor(((performance.now() - began) / 1000) * LOAD_RATE)
    for (; tracked < due; tracked++) {
      client.track({ eventType: 'order_paid', personId: `cus_${tracked % 1000}`, properties: { total: 42.5, items: tracked % 7 } })
    }
    if (performance.now() - sampledAt >= SAMPLE_MS) {
      sampledAt = performance.now()
      const pids = await backendPids()
      const backends = pids.reduce((sum, p) => sum + (memoryMib(p, 'RssAnon') || 0), 0)
      backendsPeak = Math.max(backendsPeak, backends)
      samples.push({ at: sampledAt - began, rss: memoryMib(pid, 'VmRSS'), backends, backendCount: pids.length })
    }
    await Bun.sleep(5)
  }
  const stats = await client.shutdown(30_000)
  const seconds = (performance.now() - began) / 1000
  const peakMib = memoryMib(pid, 'VmHWM')
  await backendsSql?.end({ timeout: 5 })
  if (stats.committed !== tracked || dropped > 0) {
    throw new Error(`INVALID: ${tracked} events tracked, ${stats.committed} committed, ${dropped} dropped, ${stats.queued} still queued`)
  }
  const steady = samples.filter((s) => s.at >= (LOAD_SECONDS * 1000) / 2)
  return {
    eventsPerSecond: stats.committed / seconds,
    peakMib,
    steadyMib: median(steady.map((s) => s.rss)),
    backends: Math.max(0, ...samples.map((s) => s.backendCount)),
    backendsPeakMib: database ? backendsPeak : Number.NaN,
    backendsSteadyMib: database ? median(steady.map((s) => s.backends)) : Number.NaN,
  }
}

/** Starts `checkout`'s service on `dataDir` (and `databaseUrl`, when given), times it, loads it when asked, stops it with SIGTERM. */
async function timeStart(checkout: string, dataDir: string, databaseUrl: string | undefined, load: boolean): Promise<StartTimes> {
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  const started = performance.now()
  const child = killOnExit(
    Bun.spawn([process.execPath, join(checkout, 'src/index.ts')], {
      cwd: checkout,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        DATA_DIR: dataDir,
        ADMIN_TOKEN,
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      },
      stdout: 'ignore',
      stderr: 'ignore',
    }),
  )
  const until = async (path: string) => {
    while (!(await answers200(base + path))) {
      if (child.exitCode !== null) throw new Error(`${checkout} exited ${child.exitCode} before ${path} answered`)
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`${checkout}: ${path} did not answer within ${GIVE_UP_MS} ms`)
      await Bun.sleep(POLL_MS)
    }
    return performance.now() - started
  }
  const healthzMs = await until('/healthz')
  const readyzMs = await until('/readyz')
  const cpuMs = cpuTimeMs(child.pid)
  const peakAtReady = memoryMib(child.pid, 'VmHWM')
  await Bun.sleep(IDLE_SECONDS * 1000)
  const idleMib = memoryMib(child.pid, 'VmRSS')
  // The first start's work (the first business, the partitions) may go on after /readyz: the peak is read last.
  const peakMib = Math.max(peakAtReady, memoryMib(child.pid, 'VmHWM'))
  const figures = load ? await underLoad(base, child.pid, databaseUrl) : undefined
  child.kill('SIGTERM')
  await child.exited
  return { healthzMs, readyzMs, cpuMs, peakMib, idleMib, load: figures }
}

const seconds = (ms: number) => (ms / 1000).toFixed(2)

await runBenchmark(async () => {
  const checkouts = (process.argv.length > 2 ? process.argv.slice(2) : [root]).map((path) => resolve(path))
  for (const checkout of checkouts) {
    if (!existsSync(join(checkout, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'))
  }
  console.log(
    `bun ${Bun.version}, ${ROUNDS} rounds, ${LOAD_SECONDS ? `${LOAD_SECONDS} s of ${LOAD_RATE} events/s after the restart, ` : ''}load average at the start ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  )
  const targets = checkouts.flatMap((checkout) => ENGINES.map((engine) => ({ checkout, engine, label: `${checkout} (${engine.name})` })))
  const results = new Map(targets.map((target) => [target.label, { first: [] as StartTimes[], restart: [] as StartTimes[] }]))
  for (let round = 1; round <= ROUNDS; round++) {
    for (const { checkout, engine, label } of targets) {
      const dataDir = join(mkdtempSync(join(tmpdir(), 'kg-start-')), 'data')
      if (engine.url) await recreateDatabase(engine.url)
      try {
        const first = await timeStart(checkout, dataDir, engine.url, false)
        const restart = await timeStart(checkout, dataDir, engine.url, LOAD_SECONDS > 0)
        results.get(label)!.first.push(first)
        results.get(label)!.restart.push(restart)
        const load = restart.load
        console.log(
          `round ${round} ${label}: first start ${seconds(first.healthzMs)} s to /healthz, ${seconds(first.readyzMs)} s to /readyz, ${seconds(first.cpuMs)} s CPU, peak ${first.peakMib.toFixed(0)} MiB, idle ${first.idleMib.toFixed(0)} MiB; ` +
            `restart ${seconds(restart.healthzMs)} s, ${seconds(restart.readyzMs)} s, ${seconds(restart.cpuMs)} s CPU, peak ${restart.peakMib.toFixed(0)} MiB, idle ${restart.idleMib.toFixed(0)} MiB` +
            (load
              ? `; under load ${load.eventsPerSecond.toFixed(0)} events/s: peak ${load.peakMib.toFixed(0)} MiB, steady ${load.steadyMib.toFixed(0)} MiB` +
                (engine.url
                  ? `, its ${load.backends} backends' private memory peak ${load.backendsPeakMib.toFixed(0)} MiB, steady ${load.backendsSteadyMib.toFixed(0)} MiB`
                  : '')
              : ''),
        )
      } finally {
        rmSync(join(dataDir, '..'), { recursive: true, force: true })
        if (engine.url) await recreateDatabase(engine.url, true)
      }
    }
  }
  console.log(
    '\n| Checkout | First start: /healthz | /readyz | CPU | peak MiB | idle MiB | Restart: /healthz | /readyz | CPU | peak MiB | idle MiB |',
  )
  console.log('|---|---|---|---|---|---|---|---|---|---|---|')
  for (const [label, { first, restart }] of results) {
    const cell = (times: StartTimes[], pick: 'healthzMs' | 'readyzMs' | 'cpuMs') =>
      `${seconds(median(times.map((t) => t[pick])))} s (${seconds(Math.min(...times.map((t) => t[pick])))}-${seconds(Math.max(...times.map((t) => t[pick])))})`
    const mib = (times: StartTimes[], pick: 'peakMib' | 'idleMib') => median(times.map((t) => t[pick])).toFixed(0)
    console.log(
      `| ${label} | ${cell(first, 'healthzMs')} | ${cell(first, 'readyzMs')} | ${cell(first, 'cpuMs')} | ${mib(first, 'peakMib')} | ${mib(first, 'idleMib')} | ${cell(restart, 'healthzMs')} | ${cell(restart, 'readyzMs')} | ${cell(restart, 'cpuMs')} | ${mib(restart, 'peakMib')} | ${mib(restart, 'idleMib')} |`,
    )
  }
  console.log('\nmedian (min-max) seconds from spawn to the first 200; CPU: user + system time of the process until /readyz answered')
  if (LOAD_SECONDS > 0) {
    console.log(`\n| Checkout | events/s | peak MiB | steady MiB | PostgreSQL backends | their private peak MiB | steady MiB |`)
    console.log('|---|---|---|---|---|---|---|')
    for (const [label, { restart }] of results) {
      const loads = restart.map((t) => t.load!)
      const m = (pick: keyof LoadFigures) => median(loads.map((l) => l[pick])).toFixed(0)
      console.log(
        `| ${label} | ${m('eventsPerSecond')} | ${m('peakMib')} | ${m('steadyMib')} | ${m('backends')} | ${m('backendsPeakMib')} | ${m('backendsSteadyMib')} |`,
      )
    }
    console.log(
      `\nmedians over the rounds; under ${LOAD_RATE} events/s for ${LOAD_SECONDS} s after the restart's idle; steady: the median of the second half's samples`,
    )
  }
  return 0
})
