/**
 * How long the service takes to start on the embedded database: the first start on an
 * empty DATA_DIR (initdb, every migration, the first business), then a restart on the
 * same directory. Each start is timed from the spawn to the first 200 of `/healthz` (the
 * process listens) and of `/readyz` (the database answers), polled every 10 ms, and the
 * process's CPU time (user + system, all threads) up to that `/readyz` is read from /proc:
 * on a shared machine the wall times follow the load, the CPU time much less. Memory: the
 * process's peak resident set by then (VmHWM) and its resident set after IDLE_SECONDS idle
 * (VmRSS): what a container must allow (docs/operations.md, "Memory").
 *
 *   bun bench/start.ts                        # this checkout, 5 rounds
 *   ROUNDS=9 bun bench/start.ts . /tmp/before # several checkouts, interleaved round by round
 *
 * A checkout without its own node_modules borrows this one's (a `git worktree` of an older
 * commit, say). Nothing here asserts a time: the figures go to bench/README.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { killOnExit, root, runBenchmark } from './support.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const POLL_MS = 10
const GIVE_UP_MS = 120_000

const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 10)

interface StartTimes {
  healthzMs: number
  readyzMs: number
  cpuMs: number
  /** Peak resident memory up to /readyz, and resident memory after IDLE_SECONDS, in MiB. */
  peakMib: number
  idleMib: number
}

/** A line of /proc/<pid>/status in MiB (`VmHWM`: the peak resident set; `VmRSS`: now). */
function memoryMib(pid: number, field: 'VmHWM' | 'VmRSS'): number {
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

/** Starts `checkout`'s service on `dataDir`, times it, stops it with SIGTERM. */
async function timeStart(checkout: string, dataDir: string): Promise<StartTimes> {
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  const started = performance.now()
  const child = killOnExit(
    Bun.spawn([process.execPath, join(checkout, 'src/index.ts')], {
      cwd: checkout,
      env: { PATH: process.env.PATH ?? '', PORT: String(port), DATA_DIR: dataDir },
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
  child.kill('SIGTERM')
  await child.exited
  return { healthzMs, readyzMs, cpuMs, peakMib, idleMib }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const seconds = (ms: number) => (ms / 1000).toFixed(2)

await runBenchmark(async () => {
  const checkouts = (process.argv.length > 2 ? process.argv.slice(2) : [root]).map((path) => resolve(path))
  for (const checkout of checkouts) {
    if (!existsSync(join(checkout, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'))
  }
  console.log(
    `bun ${Bun.version}, ${ROUNDS} rounds, load average at the start ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  )
  const results = new Map(checkouts.map((checkout) => [checkout, { first: [] as StartTimes[], restart: [] as StartTimes[] }]))
  for (let round = 1; round <= ROUNDS; round++) {
    for (const checkout of checkouts) {
      const dataDir = join(mkdtempSync(join(tmpdir(), 'kg-start-')), 'data')
      try {
        const first = await timeStart(checkout, dataDir)
        const restart = await timeStart(checkout, dataDir)
        results.get(checkout)!.first.push(first)
        results.get(checkout)!.restart.push(restart)
        console.log(
          `round ${round} ${checkout}: first start ${seconds(first.healthzMs)} s to /healthz, ${seconds(first.readyzMs)} s to /readyz, ${seconds(first.cpuMs)} s CPU, peak ${first.peakMib.toFixed(0)} MiB, idle ${first.idleMib.toFixed(0)} MiB; ` +
            `restart ${seconds(restart.healthzMs)} s, ${seconds(restart.readyzMs)} s, ${seconds(restart.cpuMs)} s CPU, peak ${restart.peakMib.toFixed(0)} MiB, idle ${restart.idleMib.toFixed(0)} MiB`,
        )
      } finally {
        rmSync(join(dataDir, '..'), { recursive: true, force: true })
      }
    }
  }
  console.log(
    '\n| Checkout | First start: /healthz | /readyz | CPU | peak MiB | idle MiB | Restart: /healthz | /readyz | CPU | peak MiB | idle MiB |',
  )
  console.log('|---|---|---|---|---|---|---|---|---|---|---|')
  for (const [checkout, { first, restart }] of results) {
    const cell = (times: StartTimes[], pick: keyof StartTimes) =>
      `${seconds(median(times.map((t) => t[pick])))} s (${seconds(Math.min(...times.map((t) => t[pick])))}-${seconds(Math.max(...times.map((t) => t[pick])))})`
    const mib = (times: StartTimes[], pick: 'peakMib' | 'idleMib') => median(times.map((t) => t[pick])).toFixed(0)
    console.log(
      `| ${checkout} | ${cell(first, 'healthzMs')} | ${cell(first, 'readyzMs')} | ${cell(first, 'cpuMs')} | ${mib(first, 'peakMib')} | ${mib(first, 'idleMib')} | ${cell(restart, 'healthzMs')} | ${cell(restart, 'readyzMs')} | ${cell(restart, 'cpuMs')} | ${mib(restart, 'peakMib')} | ${mib(restart, 'idleMib')} |`,
    )
  }
  console.log('\nmedian (min-max) seconds from spawn to the first 200; CPU: user + system time of the process until /readyz answered')
  return 0
})
