/**
 * `npm run bench:capacity`: how far one machine goes. Two instances behind HAProxy
 * (deploy/up.sh, with its own redis-server) over one PostgreSQL database, `capacity`, made
 * fresh for the run and dropped after it. wrk (bench/capacity.lua) sends the mix of a real
 * deployment through the proxy: page views from 16 sites' public keys and many visitor
 * addresses, backend batches of 50 events, whoami and reads of the first 50 events. The
 * offered rate rises step by step until a step's p99 passes 250 ms, or it answers errors,
 * or it cannot be carried (achieved under 95% of offered: wrk's connections wait for their
 * answers, so past saturation its latency stops growing and the shortfall shows instead).
 *
 * Per step: offered and achieved req/s, events/s committed (rows counted in the
 * database), p50/p99, errors, and the cores used by each instance, the PostgreSQL
 * processes (the run's backends and the server's background processes), HAProxy, Redis
 * and everything else (wrk included) on the machine (from /proc). Prints the knee: the last step
 * under the p99 aim, and the busiest part at the step after it.
 *
 * Environment: PGURL (default postgres://postgres@127.0.0.1:5432), CAPACITY_RATES
 * (comma-separated req/s), STEP_SECONDS (default 10).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { cpuSecondsOf } from './measure.ts'
import { startDeployment } from '../deploy/start.ts'
import { adminClient, databaseNamed, ensureDatabase, killOnExit, runBenchmark, wrkVersion } from './support.ts'

const PG = (process.env.PGURL || 'postgres://postgres@127.0.0.1:5432').replace(/\/$/, '')
const DATABASE = 'capacity'
const RATES = (process.env.CAPACITY_RATES || '200,400,700,1000,1400,1800,2300,2900,3600,4500').split(',').map(Number)
const STEP_SECONDS = Number(process.env.STEP_SECONDS || 10)
const SITES = 16
const P99_AIM_MS = 250
/** Events a request carries on average in bench/capacity.lua's mix: 14 page views and 2 batches of 50 in 20. */
const EVENTS_A_REQUEST = (14 + 2 * 50) / 20

/** The children of `parent` named `name`, from /proc. */
function childrenNamed(parent: number, name: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === parent && comm === name) found.push(Number(entry))
    } catch {}
  }
  return found
}

/** deploy/up.sh with two instances (deploy/start.ts), with the pids whose CPU the steps read. */
async function bringUp(adminToken: string) {
  // As long as bench/support.ts gives a server: two instances migrate a fresh database on a busy machine.
  const deployment = await startDeployment({ instances: 2, pgUrl: PG, database: DATABASE, adminToken, timeoutMs: 180_000 })
  killOnExit(deployment.script)
  return {
    ...deployment,
    haproxy: childrenNamed(deployment.script.pid, 'haproxy')[0] ?? 0,
    redis: childrenNamed(deployment.script.pid, 'redis-server')[0] ?? 0,
  }
}

/** Busy and total seconds of the whole machine so far, from /proc/stat. */
function machineSeconds(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = fields.reduce((sum, value) => sum + value, 0)
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
  return { busy: (total - idle) / 100, total: total / 100 }
}

interface Step {
  offered: number
  achieved: number
  events: number
  p50: number
  p99: number
  errors: number
  cores: Record<string, number>
}

await runBenchmark(async () => {
  const load = loadavg()
  console.log(
    `capacity: bun ${Bun.version}, ${cpus().length} cores (${cpus()[0]?.model}), ${wrkVersion()}, load ${load.map((l) => l.toFixed(2)).join(' ')} at the start; steps of ${STEP_SECONDS} s`,
  )
  if (load[0]! > 1) console.log(`note: the machine is busy (load ${load[0]!.toFixed(2)}): the figures are low and noisy`)
  const server = postgres(`${PG}/postgres`, { max: 1, onnotice: () => {} })
  await server.unsafe(`drop database if exists ${DATABASE} with (force)`)
  const databaseUrl = databaseNamed(PG, DATABASE)
  await ensureDatabase(databaseUrl)
  const adminToken = `capacity-${crypto.randomUUID()}`
  const deployment = await bringUp(adminToken).catch(async (error) => {
    await server.unsafe(`drop database if exists ${DATABASE} with (force)`)
    await server.end({ timeout: 5 })
    throw error
  })
  const db = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const admin = adminClient(deployment.proxy, adminToken)
    const publicKeys: string[] = []
    const privateKeys: string[] = []
    const origins: string[] = []
    for (let site = 0; site < SITES; site++) {
      const business = await admin.createBusiness(`site ${site}`)
      const host = `site${site}.example.com`
      origins.push(`https://${host}`)
      publicKeys.push(await admin.createKey(business, 'site', { allowedOrigins: [host] }))
      privateKeys.push(
        await admin.createKey(business, 'backend', {
          type: 'private',
          allowedOrigins: [],
          scopes: ['ANALYTICS_WRITE', 'ANALYTICS_READ'],
          rateLimit: { limit: 1_000_000, windowSeconds: 60 },
        }),
      )
    }
    const eventCount = async () => (await db<{ n: number }[]>`select count(*)::int as n from analytics_events`)[0]!.n
    const postgresPids = async () =>
      (
        await server<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${DATABASE} or backend_type <> 'client backend'`
      ).map((row) => row.pid)

    const startWrk = (rate: number, seconds: number) => {
      const connections = Math.max(32, Math.ceil(rate / 10))
      return killOnExit(
        Bun.spawn(
          [
            'wrk',
            '-t1',
            `-c${connections}`,
            `-d${seconds}s`,
            '--timeout',
            '10s',
            '-s',
            join(import.meta.dir, 'capacity.lua'),
            deployment.proxy,
          ],
          {
            env: {
              ...process.env,
              WRK_REPORT: join(import.meta.dir, 'wrk-report.lua'),
              CAP_PUBLIC_KEYS: publicKeys.join(','),
              CAP_PRIVATE_KEYS: privateKeys.join(','),
              CAP_ORIGINS: origins.join(','),
              CAP_RATE: String(rate),
            },
            stdout: 'pipe',
            stderr: 'inherit',
          },
        ),
      )
    }
    // A warm-up, not reported: the instances' first requests compile their code.
    await startWrk(RATES[0]!, 4).exited

    const steps: Step[] = []
    console.log(
      '| offered req/s | achieved req/s | events/s committed | p50 | p99 | errors | instance 1 | instance 2 | PostgreSQL | HAProxy | Redis | others (wrk included) |',
    )
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (const rate of RATES) {
      const pgPids = await postgresPids()
      const eventsBefore = await eventCount()
      const wrk = startWrk(rate, STEP_SECONDS)
      const parts: Record<string, number[]> = {
        'instance 1': [deployment.instances[0]!.pid],
        'instance 2': [deployment.instances[1]!.pid],
        PostgreSQL: pgPids,
        HAProxy: [deployment.haproxy],
        Redis: [deployment.redis],
      }
      const before = Object.fromEntries(Object.entries(parts).map(([name, pids]) => [name, cpuSecondsOf(pids) ?? 0]))
      const machineBefore = machineSeconds()
      const started = performance.now()
      const text = await new Response(wrk.stdout).text()
      await wrk.exited
      const seconds = (performance.now() - started) / 1000
      const machine = machineSeconds()
      const cores: Record<string, number> = {}
      let ours = 0
      for (const [name, pids] of Object.entries(parts)) {
        cores[name] = ((cpuSecondsOf(pids) ?? 0) - before[name]!) / seconds
        ours += cores[name]!
      }
      const report = JSON.parse(text.trim().split('\n').at(-1)!) as Record<string, number>
      // The writer commits within a moment of the 202: wait for it before counting.
      await Bun.sleep(1_000)
      const committed = (await eventCount()) - eventsBefore
      const otherCores = (machine.busy - machineBefore.busy) / seconds - ours
      cores.others = Math.max(0, otherCores)
      const step: Step = {
        offered: rate,
        achieved: report.requests! / (report.durationUs! / 1e6),
        events: committed / (report.durationUs! / 1e6),
        p50: report.p50Us! / 1000,
        p99: report.p99Us! / 1000,
        errors: report.statusErrors! + report.connectErrors! + report.readErrors! + report.writeErrors! + report.timeouts!,
        cores,
      }
      steps.push(step)
      const c = (name: string) => (step.cores[name] ?? 0).toFixed(2)
      console.log(
        `| ${rate} | ${step.achieved.toFixed(0)} | ${step.events.toFixed(0)} | ${step.p50.toFixed(1)} ms | ${step.p99.toFixed(1)} ms | ${step.errors} | ${c('instance 1')} | ${c('instance 2')} | ${c('PostgreSQL')} | ${c('HAProxy')} | ${c('Redis')} | ${c('others')} |`,
      )
      if (step.p99 >= P99_AIM_MS || step.errors > 0 || step.achieved < 0.95 * rate) break
    }
    console.log('(cells after p99: cores used during the step, from /proc/<pid>/stat; others: the rest of the machine, wrk included)')
    const passed = steps.filter((s) => s.p99 < P99_AIM_MS && s.errors === 0 && s.achieved >= 0.95 * s.offered)
    const knee = passed.at(-1)
    const beyond = steps[passed.length]
    const busiest = (s: Step) =>
      Object.entries(s.cores)
        .filter(([name]) => name !== 'others')
        .sort((a, b) => b[1] - a[1])[0]!
    if (!knee) console.log('knee: not reached: the first step already failed the aim')
    else {
      const [part, used] = busiest(beyond ?? knee)
      console.log(
        `knee: ${knee.achieved.toFixed(0)} req/s, ${knee.events.toFixed(0)} events/s committed (mix of ${EVENTS_A_REQUEST} events a request), p99 ${knee.p99.toFixed(1)} ms` +
          (beyond
            ? `; the next step (${beyond.offered} req/s offered) reached ${beyond.achieved.toFixed(0)} req/s, p99 ${beyond.p99.toFixed(1)} ms, ${beyond.errors} errors`
            : '; the last rate tried still passed: raise CAPACITY_RATES'),
      )
      console.log(
        `saturated: ${part} (${used.toFixed(2)} of ${cpus().length} cores), the busiest part ${beyond ? 'past the knee' : 'at the last step'}`,
      )
    }
    return 0
  } finally {
    await db.end({ timeout: 5 })
    await deployment.stop()
    await server.unsafe(`drop database if exists ${DATABASE} with (force)`)
    await server.end({ timeout: 5 })
  }
})
