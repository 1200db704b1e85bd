/**
 * `bun bench/distributed-flood.ts`: floods spread over many client addresses, through the
 * trusted proxy's X-Forwarded-For (the service runs with TRUST_PROXY=127.0.0.1), each with
 * a baseline measured in the same run before the flood starts.
 *
 * - Sign-in: wrong passwords at SIGN_IN_RATE a second (default 19), each from a random
 *   address, 30% for one real account and 70% for random emails; meanwhile another
 *   business's owner signs in every 1.5 s from her own addresses. Prints her sign-in p50
 *   before and during the flood (aim: under 1 s during), the flood's answers, peak memory.
 * - Large bodies: one business's public key posts BODY_KB-KiB batches (default 935: 60
 *   events of 15.5 KiB of properties) at BODY_RATE a second (default 68) from random
 *   addresses; another business tracks one event every 20 ms with its own public key and
 *   asks whoami every 100 ms. Prints its tracking p50/p99 and whoami p50 before and during,
 *   the events the flood stored and the service's peak memory (aim: p99 < 250 ms, peak
 *   < 400 MiB).
 *
 * The service uses its real password hashing (argon2id, 64 MiB, 2 passes). Environment:
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench, created when missing),
 * BENCH_SECONDS (each flood's length, default 20), SIGN_IN_RATE, BODY_RATE, BODY_KB,
 * BENCH_ONLY (`sign-in` or `bodies`), COMPARE_TREES (comma-separated checkouts measured
 * the same way in the same run, after this one).
 */
import { readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import postgres from 'postgres'
import { databaseUrl, ensureDatabase, pinned, root, runBenchmark, startService } from './support.ts'
import { signInForm, signInFrom } from '../test/support/sign-in-form.ts'

const SECONDS = Number(process.env.BENCH_SECONDS || 20)
const SIGN_IN_RATE = Number(process.env.SIGN_IN_RATE || 19)
const BODY_RATE = Number(process.env.BODY_RATE || 68)
const BODY_KB = Number(process.env.BODY_KB || 935)
const ONLY = process.env.BENCH_ONLY
const TREES = [root, ...(process.env.COMPARE_TREES ?? '').split(',').filter((tree) => tree !== '')]
const ORIGIN = 'https://www.example.com'
const PASSWORD = 'correct horse battery staple'
/** Most flood requests in flight from this script: past it, a request is skipped (counted). */
const MAX_IN_FLIGHT = 512

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN
}

function peakMemoryMiB(pid: number): number {
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN)
  return kb / 1024
}

function randomAddress(): string {
  const byte = () => Math.floor(Math.random() * 254) + 1
  return `${byte()}.${byte()}.${byte()}.${byte()}`
}

/** Each tree on a database of its own: an older tree must not meet a newer one's migrations. */
function databaseOf(tree: string): string {
  if (tree === root) return databaseUrl
  const url = new URL(databaseUrl)
  url.pathname = `${url.pathname}_${Bun.hash(tree).toString(36)}`
  return url.toString()
}

async function startFor(tree: string) {
  const database = databaseOf(tree)
  await ensureDatabase(database)
  const service = await startService({ cwd: tree, env: { DATABASE_URL: database, TRUST_PROXY: '127.0.0.1' } })
  return { service, database, runId: crypto.randomUUID().slice(0, 8) }
}

/** Counts answers by status (or error name). */
class Tally {
  readonly counts = new Map<string, number>()
  add(what: number | string): void {
    this.counts.set(String(what), (this.counts.get(String(what)) ?? 0) + 1)
  }
  toString(): string {
    return [...this.counts].map(([what, n]) => `${what}=${n}`).join(' ')
  }
}

/** Sends `send()` `rate` times a second for `seconds`, whatever the answers' times (an open loop). */
async function openLoop(rate: number, seconds: number, send: () => Promise<number>, tally: Tally): Promise<void> {
  const pending = new Set<Promise<void>>()
  const started = performance.now()
  for (let i = 0; performance.now() < started + seconds * 1000; i++) {
    if (pending.size >= MAX_IN_FLIGHT) tally.add('skipped')
    else {
      const request: Promise<void> = send()
        .then((status) => tally.add(status))
        .catch((error: Error) => tally.add(error.name))
        .finally(() => pending.delete(request))
      pending.add(request)
    }
    await Bun.sleep(Math.max(0, started + ((i + 1) * 1000) / rate - performance.now()))
  }
  await Promise.all(pending)
}

/** Calls `measure()` every `everyMs` until `stop` resolves; answers the latencies. */
async function sample(everyMs: number, measure: () => Promise<unknown>, stop: Promise<unknown>, tally?: Tally): Promise<number[]> {
  let stopped = false
  void stop.then(() => {
    stopped = true
  })
  const latencies: number[] = []
  while (!stopped) {
    const started = performance.now()
    try {
      const status = await measure()
      tally?.add(status as number)
      latencies.push(performance.now() - started)
    } catch (error) {
      // A refusal is counted, not timed: its speed says nothing of the sign-in's.
      tally?.add((error as Error).message)
    }
    await Bun.sleep(Math.max(0, started + everyMs - performance.now()))
  }
  return latencies
}

// ---- Sign-in ---------------------------------------------------------------------------

interface SignInRun {
  tree: string
  before: number
  during: number
  ownerAnswers: string
  floodAnswers: string
  peakMiB: number
}

async function signInFlood(tree: string): Promise<SignInRun> {
  const { service, runId } = await startFor(tree)
  const base = service.base
  const attacked = `ada-${runId}@example.com`
  const owner = `grace-${runId}@example.com`
  for (const [email, name] of [
    [attacked, 'attacked'],
    [owner, 'other'],
  ] as const) {
    const business = await service.admin.createBusiness(`${name} ${runId}`)
    const response = await fetch(`${base}/admin/v0/businesses/${business}/members`, {
      method: 'POST',
      headers: { authorization: `Bearer ${service.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD, role: 'owner' }),
    })
    if (response.status !== 201) throw new Error(`adding a member answered ${response.status}: ${await response.text()}`)
  }
  const form = await signInForm(base)
  const ownerTally = new Tally()
  // Every 1.5 s from one of her 8 addresses (home, office, phone...): within the throttle's
  // budgets for one email (60 attempts a minute) and for one email from one address (10).
  let signIns = 0
  const ownerSignIn = async () => {
    const status = await signInFrom(base, form, owner, PASSWORD, `198.51.100.${20 + (signIns++ % 8)}`)
    if (status !== 303) throw new Error(`answered ${status}`)
    return status
  }

  const before = await sample(1_500, ownerSignIn, Bun.sleep(6_000), ownerTally)
  const floodTally = new Tally()
  const flood = openLoop(
    SIGN_IN_RATE,
    SECONDS,
    () =>
      Math.random() < 0.3
        ? signInFrom(base, form, attacked, `guess ${Math.random()}`, randomAddress())
        : signInFrom(base, form, `${crypto.randomUUID().slice(0, 12)}@example.org`, `guess ${Math.random()}`, randomAddress()),
    floodTally,
  )
  // The owner signs in while the flood runs, from its third second on.
  await Bun.sleep(3_000)
  const during = await sample(1_500, ownerSignIn, flood, ownerTally)
  const peakMiB = peakMemoryMiB(service.process.pid)
  service.process.kill()
  await service.process.exited
  return {
    tree,
    before: percentile(before, 50),
    during: percentile(during, 50),
    ownerAnswers: ownerTally.toString(),
    floodAnswers: floodTally.toString(),
    peakMiB,
  }
}

// ---- Large bodies ----------------------------------------------------------------------

interface BodiesRun {
  tree: string
  trackBefore: { p50: number; p99: number }
  trackDuring: { p50: number; p99: number }
  whoamiBefore: number
  whoamiDuring: number
  shopAnswers: string
  floodAnswers: string
  floodStored: number
  peakMiB: number
}

async function bodiesFlood(tree: string, floodBody: string): Promise<BodiesRun> {
  const { service, database, runId } = await startFor(tree)
  const base = service.base
  const flooder = await service.admin.createBusiness(`flooder ${runId}`)
  const shop = await service.admin.createBusiness(`shop ${runId}`)
  const floodKey = await service.admin.createKey(flooder, 'copied public key')
  const shopKey = await service.admin.createKey(shop, 'shop site')
  // The shop's visitors: 50 addresses, each well within its 300 requests a minute.
  let visits = 0
  const shopAddress = () => `198.51.100.${30 + (visits++ % 50)}`
  const shopTally = new Tally()
  const track = async () => {
    const response = await fetch(`${base}/api/v0/analytics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${shopKey}`, origin: ORIGIN, 'content-type': 'application/json', 'x-forwarded-for': shopAddress() },
      body: JSON.stringify({ eventType: 'page_view', url: `${ORIGIN}/checkout` }),
      signal: AbortSignal.timeout(30_000),
    })
    await response.arrayBuffer()
    return response.status
  }
  const whoami = async () => {
    const response = await fetch(`${base}/api/v0/whoami`, {
      headers: { authorization: `Bearer ${shopKey}`, origin: ORIGIN, 'x-forwarded-for': shopAddress() },
      signal: AbortSignal.timeout(30_000),
    })
    await response.arrayBuffer()
    return response.status
  }
  const quiet = Bun.sleep(5_000)
  const [trackBefore, whoamiBefore] = await Promise.all([sample(20, track, quiet, shopTally), sample(100, whoami, quiet)])

  const floodTally = new Tally()
  const flood = openLoop(
    BODY_RATE,
    SECONDS,
    async () => {
      const response = await fetch(`${base}/api/v0/analytics`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${floodKey}`,
          origin: ORIGIN,
          'content-type': 'application/json',
          'x-forwarded-for': randomAddress(),
        },
        body: floodBody,
        signal: AbortSignal.timeout(60_000),
      })
      await response.arrayBuffer()
      return response.status
    },
    floodTally,
  )
  await Bun.sleep(2_000)
  const [trackDuring, whoamiDuring] = await Promise.all([sample(20, track, flood, shopTally), sample(100, whoami, flood)])
  const peakMiB = peakMemoryMiB(service.process.pid)
  service.process.kill()
  await service.process.exited
  const sql = postgres(database, { max: 1, onnotice: () => {} })
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from analytics_events where business_id = ${flooder}`
  await sql.end({ timeout: 5 })
  return {
    tree,
    trackBefore: { p50: percentile(trackBefore, 50), p99: percentile(trackBefore, 99) },
    trackDuring: { p50: percentile(trackDuring, 50), p99: percentile(trackDuring, 99) },
    whoamiBefore: percentile(whoamiBefore, 50),
    whoamiDuring: percentile(whoamiDuring, 50),
    shopAnswers: shopTally.toString(),
    floodAnswers: floodTally.toString(),
    floodStored: row!.n,
    peakMiB,
  }
}

/** About `kib` KiB of JSON: 60 events, each with properties just under the 16 KiB a property bag may hold. */
function floodBatch(kib: number): string {
  const count = Math.max(1, Math.min(60, Math.round(kib / 15.5)))
  const pad = 'x'.repeat(Math.min(16_000, Math.floor((kib * 1024) / count) - 120))
  return JSON.stringify({
    events: Array.from({ length: count }, (_, i) => ({ eventType: 'page_view', url: `${ORIGIN}/articles/${i}`, properties: { pad } })),
  })
}

await runBenchmark(async () => {
  await ensureDatabase(databaseUrl)
  console.log(
    `distributed flood benchmark: bun ${Bun.version}, ${cpus().length} cores (${cpus()[0]?.model}), service pinned: ${pinned}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; floods of ${SECONDS} s from random addresses through X-Forwarded-For`,
  )
  const f = (ms: number) => `${ms.toFixed(0)} ms`
  if (ONLY !== 'bodies') {
    console.log(`\nsign-in: ${SIGN_IN_RATE}/s wrong passwords, 30% for one real account; another owner signs in every 1.5 s`)
    console.log('| Tree | owner p50 before | owner p50 during | ratio | owner answers | flood answers | peak memory |')
    console.log('|---|---|---|---|---|---|---|')
    for (const tree of TREES) {
      const run = await signInFlood(tree)
      console.log(
        `| ${run.tree} | ${f(run.before)} | ${f(run.during)} | ${(run.during / run.before).toFixed(1)}x | ${run.ownerAnswers} | ${run.floodAnswers} | ${run.peakMiB.toFixed(0)} MiB |`,
      )
    }
  }
  if (ONLY !== 'sign-in') {
    const body = floodBatch(BODY_KB)
    console.log(
      `\nlarge bodies: ${(body.length / 1024).toFixed(0)} KiB batches at ${BODY_RATE}/s through one public key; another business tracks every 20 ms`,
    )
    console.log(
      '| Tree | tracking p50/p99 before | during | whoami p50 before / during | shop answers | flood answers | flood events stored | peak memory |',
    )
    console.log('|---|---|---|---|---|---|---|---|')
    for (const tree of TREES) {
      const run = await bodiesFlood(tree, body)
      console.log(
        `| ${run.tree} | ${f(run.trackBefore.p50)} / ${f(run.trackBefore.p99)} | ${f(run.trackDuring.p50)} / ${f(run.trackDuring.p99)} | ${f(run.whoamiBefore)} / ${f(run.whoamiDuring)} | ${run.shopAnswers} | ${run.floodAnswers} | ${run.floodStored} | ${run.peakMiB.toFixed(0)} MiB |`,
      )
    }
  }
  return 0
})
