/**
 * `bun bench/instructions.ts`: instructions per request of the service's hot routes against
 * the contract's native floor (bench/bare-elysia.ts with FLOOR=1) and the two higher
 * ceilings of `npm run bench` (the floor answered at the turn's end, and the same with the
 * contract's checks in one lean function), counted by valgrind's callgrind in the server
 * process. Instruction counts do not move with what else the
 * machine is doing, so a change to the hot path can be priced on a busy machine, where
 * wrk's req/s cannot; wrk (`npm run bench`) stays the measure of the aims.
 *
 * Each server runs under callgrind; the service is bench/service-without-store.ts (no event
 * is stored: whoami stores none anyway) with the statement deadline raised, since a JIT
 * compile under valgrind can hold its event loop for seconds. A client in this process (keep-alive connections,
 * `CONNECTIONS` requests in flight, as wrk keeps them) sends a warm-up, then the counters
 * switched on and zeroed (`callgrind_control`), `REQUESTS` more are sent and counted
 * (`callgrind_control --dump`). User space only: the kernel's share follows the user
 * time (bench/README.md, "Where the service's extra kernel time goes").
 *
 * BENCH_ROUTE=whoami (default) | track (one page view, the service's event store off, as
 * `BENCH_ROUTE=track npm run bench`) | private (whoami with a private key; IPS=100 gives the
 * key 100 allowed ranges, the client's address matched by the last). COMPARE_TREE=<dir>:
 * also the service of another checkout (one that has this file). REQUESTS (default 20000), WARMUP (default 5000).
 * KEEP_DUMPS=1 keeps the callgrind files for callgrind_annotate.
 * Needs valgrind and PostgreSQL (DATABASE_URL, default the bench database). A few minutes.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CheckedKey } from './checked-floor.ts'
import { ALLOWED_ORIGIN, databaseUrl, ensureDatabase, root, runBenchmark, startServer, startService, stopChildren } from './support.ts'

const ROUTE = process.env.BENCH_ROUTE ?? 'whoami'
const REQUESTS = Number(process.env.REQUESTS ?? 20_000)
const WARMUP = Number(process.env.WARMUP ?? 5_000)
// Fewer than wrk's 64: under callgrind a request takes ~50x longer, and 64 waiting would
// push the service's own database probes past their deadlines.
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 8)
const ORIGIN = 'https://www.example.com'
const TRACK_BODY = '{"eventType":"page_view","url":"https://www.example.com/pricing","anonymousId":"visitor-1"}'

const outDir = mkdtempSync(join(tmpdir(), 'keygate-callgrind-'))

function underCallgrind(name: string, command: string[]): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${join(outDir, `${name}.%p`)}`,
    // Instrumented only from the measurement on: start-up runs about as fast as without
    // callgrind (timers and the database's deadlines keep their meaning), and neither it
    // nor the warm-up is counted.
    '--instr-atstart=no',
    ...command,
  ]
}

function control(args: string[], pid: number): string {
  const result = Bun.spawnSync(['callgrind_control', ...args, String(pid)])
  if (result.exitCode !== 0) throw new Error(`callgrind_control ${args.join(' ')} failed: ${result.stderr.toString()}`)
  return result.stdout.toString()
}

/** Sends `count` requests, `CONNECTIONS` at a time; throws on any answer but `status`. */
async function send(url: string, init: RequestInit, status: number, count: number): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < count) {
      next++
      const response = await fetch(url, init)
      const text = await response.text()
      if (response.status !== status) throw new Error(`${url} answered ${response.status}, not ${status}: ${text}`)
    }
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, worker))
}

/** Instructions counted since the last zeroing, read from a fresh dump. */
function dump(name: string, pid: number): number {
  const before = new Set(readdirSync(outDir))
  control([`--dump=${name}`], pid)
  const fresh = readdirSync(outDir).filter((f) => f.includes(`.${pid}.`) && !before.has(f))
  if (fresh.length !== 1) throw new Error(`expected one new callgrind dump for ${name}, found ${fresh.length}`)
  const total = /^(?:summary|totals):\s*(\d+)/m.exec(readFileSync(join(outDir, fresh[0]!), 'utf8'))?.[1]
  if (!total) throw new Error(`no totals in ${fresh[0]}`)
  return Number(total)
}

/**
 * Instructions per request of the server `pid` over `REQUESTS` requests, after the
 * warm-up, and what it does idle for as long as those requests took. Under callgrind a
 * second holds a few hundred requests instead of tens of thousands, so timers (the usage
 * and lastUsedAt flushes, the database's probes) weigh on each request a hundred times
 * more than at full speed: `perRequest` has the idle rate taken out.
 */
async function measure(name: string, pid: number, url: string, init: RequestInit, status: number) {
  await send(url, init, status, WARMUP)
  control(['--instr=on'], pid)
  // Re-instrumenting the code costs its first requests more; they are not counted.
  await send(url, init, status, Math.min(WARMUP, 1000))
  control(['--zero'], pid)
  const started = performance.now()
  await send(url, init, status, REQUESTS)
  const seconds = (performance.now() - started) / 1000
  const busy = dump(`${name}-busy`, pid)
  control(['--zero'], pid)
  await Bun.sleep(seconds * 1000)
  const idle = dump(`${name}-idle`, pid)
  return { perRequest: (busy - idle) / REQUESTS, raw: busy / REQUESTS, idlePerSecond: idle / seconds }
}

async function main(): Promise<number> {
  if (!Bun.which('valgrind') || !Bun.which('callgrind_control')) {
    console.error('valgrind is not installed: `apt-get install -y valgrind`, then run again.')
    return 1
  }
  await ensureDatabase(databaseUrl)
  const track = ROUTE === 'track'
  const path = track ? '/api/v0/analytics' : '/api/v0/whoami'
  const status = track ? 202 : 200
  const targets: { label: string; pid: number; base: string; key?: string }[] = []

  const serviceCommand = (cwd: string) =>
    underCallgrind(`service-${targets.length}`, [process.execPath, join(cwd, 'bench/service-without-store.ts')])
  const env = { BENCH_QUERY_TIMEOUT_MS: '600000' }
  const service = await startService({ command: serviceCommand(root), env })
  const business = await service.admin.createBusiness('bench')
  const key =
    ROUTE === 'private'
      ? await service.admin.createKey(business, 'bench', {
          type: 'private',
          allowedOrigins: [],
          scopes: ['ANALYTICS_READ'],
          allowedIps: allowedIps(Number(process.env.IPS ?? 0)),
          rateLimit: { limit: 1_000_000, windowSeconds: 1 },
        })
      : await service.admin.createKey(business, 'bench', { rateLimit: { limit: 1_000_000, windowSeconds: 1 } })
  targets.push({ label: 'keygate', pid: service.process.pid, base: service.base })
  const compareTree = process.env.COMPARE_TREE
  if (compareTree) {
    const other = await startService({ command: serviceCommand(compareTree), cwd: compareTree, env })
    targets.push({ label: `keygate at ${compareTree}`, pid: other.process.pid, base: other.base })
  }
  // The two higher ceilings of `npm run bench`: the floor answered at the turn's end, and
  // the same with the contract's checks in one lean function (bench/checked-floor.ts).
  const turnEnd = await startServer(underCallgrind('turn-end', [process.execPath, 'bench/bare-elysia.ts']), {
    PORT: '0',
    FLOOR_AT_TURN_END: '1',
  })
  targets.push({ label: "the floor answered at the turn's end", pid: turnEnd.process.pid, base: turnEnd.base })
  const checkedKey: CheckedKey = {
    plain: key,
    type: ROUTE === 'private' ? 'private' : 'public',
    id: crypto.randomUUID(),
    businessId: business,
    domain: ALLOWED_ORIGIN,
    scopes: ROUTE === 'private' ? ['ANALYTICS_READ'] : ['ANALYTICS_WRITE'],
    limit: 1_000_000,
  }
  const checked = await startServer(underCallgrind('checked', [process.execPath, 'bench/bare-elysia.ts']), {
    PORT: '0',
    FLOOR_CHECKED: JSON.stringify(checkedKey),
  })
  targets.push({ label: "the turn-end floor + the contract's checks, lean", pid: checked.process.pid, base: checked.base })
  // Last: the ratios are against it.
  const floor = await startServer(underCallgrind('floor', [process.execPath, 'bench/bare-elysia.ts']), { PORT: '0', FLOOR: '1' })
  targets.push({ label: "the contract's native floor", pid: floor.process.pid, base: floor.base })

  const headers: Record<string, string> = { authorization: `Bearer ${key}` }
  if (ROUTE !== 'private') headers.origin = ORIGIN
  if (track) headers['content-type'] = 'application/json'
  const init: RequestInit = { method: track ? 'POST' : 'GET', headers, body: track ? TRACK_BODY : undefined }

  console.log(`bun ${Bun.version}; ${ROUTE}; instructions per request (callgrind, ${REQUESTS} requests after ${WARMUP})\n`)
  const counts: Awaited<ReturnType<typeof measure>>[] = []
  for (const [i, target] of targets.entries()) {
    const count = await measure(`t${i}`, target.pid, `${target.base}${path}`, init, status)
    counts.push(count)
    console.log(`${target.label}: ${Math.round(count.perRequest).toLocaleString('en')}`)
  }
  const floorCount = counts.at(-1)!.perRequest
  const n = (x: number) => Math.round(x).toLocaleString('en')
  console.log(
    [
      '',
      `| Server, ${ROUTE} | instructions per request, idle rate taken out | against the floor | as counted | idle, per second |`,
      '|---|---|---|---|---|',
      ...targets.map(
        (target, i) =>
          `| ${target.label} | ${n(counts[i]!.perRequest)} | ${(counts[i]!.perRequest / floorCount).toFixed(2)} | ${n(counts[i]!.raw)} | ${n(counts[i]!.idlePerSecond)} |`,
      ),
    ].join('\n'),
  )
  stopChildren()
  // KEEP_DUMPS=1: leave the callgrind files for callgrind_annotate (their folder is printed).
  if (process.env.KEEP_DUMPS === '1') console.log(`\ncallgrind files: ${outDir}`)
  else rmSync(outDir, { recursive: true, force: true })
  return 0
}

/** 100 ranges, none of them the loopback the client comes from, then 127.0.0.0/8 last. */
function allowedIps(count: number): string[] {
  if (count === 0) return []
  const ranges = Array.from({ length: count - 1 }, (_, i) => `10.${i}.0.0/16`)
  return [...ranges, '127.0.0.0/8']
}

await runBenchmark(main)
