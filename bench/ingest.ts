/**
 * `bun bench/ingest.ts`: ingestion through `POST /api/v0/analytics` on PostgreSQL against
 * the two ceilings of issue 19, measured in the same run:
 *
 * - 1-event POSTs at 128 connections against the same service's `GET /api/v0/whoami`
 *   (public key, allowed Origin, as bench/whoami.ts calls it), also at 128 connections
 *   (aim: 0.5);
 * - 50-event batches at 64 connections against the fastest client form of the same rows:
 *   the rows the service just stored, with fresh ids of the same kind, sent by a client
 *   (this process) as text `COPY ... FROM STDIN`, 500 rows a statement (each its own
 *   commit), on two connections (CLIENT_COPY_CONNECTIONS); the client's building of the COPY text is timed
 *   with it (aim: 0.85).
 *
 * And, for this tree, the service's own event writer alone (the same rows through
 * `eventWriter` from this process: no HTTP, no body, no key chain): the most a service
 * built on it can reach; and the single events' floor (bench/floor-commit.ts): the
 * contract's native work for a page view and a commit of its rows by the same statement
 * before each 202, its whoami and its single events measured as the service's are. Its
 * 1-event POSTs against its own whoami are the most the 0.5 aim can reach on this machine.
 *
 * The measurements run interleaved, REPETITIONS times, and the medians are compared,
 * so the ratios hold while the machine's speed drifts. The service runs on core 0, wrk on
 * core 1, PostgreSQL unpinned (so it shares the cores with both, as in production on one
 * machine; the ceilings have them to themselves).
 *
 * Stored rows are checked against the answers: each ingest run sends a fixed budget of
 * POSTs (sized from a warm-up to last about BENCH_SECONDS) with a key of a business of its
 * own; the wrk script counts the answers and stops once every POST is answered; requests
 * it sends after the budget are `GET /healthz` (which writes nothing), so no POST is cut
 * off mid-flight. wrk always runs for its whole `-d`, so the script prints a line once the
 * last POST is answered and this one interrupts wrk then: events/s is the rows stored over
 * the time until that line (a 202 is sent after its commit). A run whose rows are fewer
 * than its 2xx answers times the events per request, or with any non-2xx answer, makes
 * the result INVALID (exit status 1).
 *
 * Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench, created
 * when missing), BENCH_SECONDS (seconds per measured run, default 4), BENCH_REPETITIONS
 * (default 3). COMPARE_TREE=<dir>: also measure the service of another checkout (main
 * before a change) in the same run, interleaved, on a database of its own
 * (COMPARE_DATABASE_URL, default DATABASE_URL with `_compare` appended), since the trees'
 * migrations differ.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, sql } from 'drizzle-orm'
import postgres from 'postgres'
import { openDatabase } from '../db/client.ts'
import { analyticsEvents } from '../db/schema/index.ts'
import { COPY_EVENTS, copyText, type EventRow, eventWriter } from '../src/events/write.ts'
import { POSTGRES_INSERTS_IN_FLIGHT as STATEMENTS_IN_FLIGHT } from '../src/config.ts'
import { cpuSecondsOf, median as medianOf } from './measure.ts'
import {
  ALLOWED_ORIGIN,
  databaseUrl,
  ensureDatabase,
  killOnExit,
  onCore,
  pinned,
  root,
  runBenchmark,
  startServer,
  startService,
  stopChildren,
  wrkVersion,
} from './support.ts'

const MEASURED_SECONDS = Number(process.env.BENCH_SECONDS || 4)
const REPETITIONS = Number(process.env.BENCH_REPETITIONS || 3)
const WARMUP_SECONDS = 1
const ROWS_PER_STATEMENT = 500
/** The batches' ceiling as issue 19 defines it: a client's COPY on two connections, whatever the service runs. */
const CLIENT_COPY_CONNECTIONS = 2
// All requests come from one address: the per-visitor budget is not
// what this measures, so the keys carry one no run reaches.
const UNLIMITED = { rateLimit: { limit: 1_000_000, windowSeconds: 1 } }
const ORIGIN = `https://www.${ALLOWED_ORIGIN}`

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
  if budget > 0 and accepted + refused == budget then
    -- Every POST is answered, so every 202's rows are committed: tell the script now.
    io.write("budget answered\\n")
    io.flush()
    wrk.thread:stop()
  end
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

interface IngestReport {
  durationUs: number
  /** POSTs answered 202. */
  accepted: number
  /** POSTs answered anything else. */
  refused: number
  socketErrors: number
  p50Us: number
  p99Us: number
}

/** The line bench/wrk-report.lua prints (the fields read here). */
type WhoamiReport = Record<
  'requests' | 'durationUs' | 'statusErrors' | 'connectErrors' | 'readErrors' | 'writeErrors' | 'timeouts' | 'p99Us',
  number
>

/** One measured run: a rate and whether its answers and rows hold up. */
interface Run {
  perSecond: number
  p99Us: number | null
  detail: string
  valid: boolean
}

interface IngestShape {
  label: string
  connections: number
  eventsPerRequest: number
}

const SINGLE: IngestShape = { label: '1-event POSTs', connections: 128, eventsPerRequest: 1 }
const BATCH: IngestShape = { label: '50-event batches', connections: 64, eventsPerRequest: 50 }
const WHOAMI_CONNECTIONS = 128

/**
 * A server under test: this tree's service, COMPARE_TREE's on a database of its own, or
 * the single events' floor (bench/bare-elysia.ts with FLOOR_DATABASE_URL) on this tree's.
 */
interface Subject {
  label: string
  kind: 'service' | 'floor'
  base: string
  pid: number
  url: string
  sql: postgres.Sql
  whoamiKey: string
  /** A key for one run and the business its rows are stored under (the floor has one of each). */
  runKey(name: string): Promise<{ key: string; businessId: string }>
}

interface Runs {
  whoami: Run[]
  single: Run[]
  batch: Run[]
  /** A client's COPY of the batches' rows: the batches' ceiling. */
  copy: Run[]
  /** This tree's event writer without the service: the most a service built on it can reach. */
  writer: Run[]
}

async function main(): Promise<number> {
  if (!Bun.which('wrk')) {
    console.error('wrk is not installed: `apt-get install -y wrk`, then run `bun bench/ingest.ts` again.')
    return 1
  }
  const workDir = mkdtempSync(join(tmpdir(), 'keygate-ingest-'))
  const script = join(workDir, 'ingest.lua')
  writeFileSync(script, WRK_SCRIPT)
  const stamp = new Date().toISOString()
  const subjects: Subject[] = []

  try {
    subjects.push(await startSubject('this tree', databaseUrl))
    subjects.push(await startFloor(databaseUrl))
    const compareTree = process.env.COMPARE_TREE
    if (compareTree) {
      // Its own database: the trees' migrations differ (the indexes are part of what is compared).
      const url = process.env.COMPARE_DATABASE_URL || `${databaseUrl}_compare`
      subjects.push(await startSubject(compareTree, url, compareTree))
    }
    console.log(
      [
        `date: ${stamp}; bun ${Bun.version}; ${wrkVersion()}`,
        `cpu: ${cpus()[0]?.model ?? 'unknown'} x${cpus().length}; pinned: ${pinned ? 'service core 0, wrk core 1, PostgreSQL unpinned' : 'no'}; load average ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}`,
        `${(await subjects[0]!.sql<{ version: string }[]>`select version()`)[0]!.version.split(' on ')[0]}`,
        `${REPETITIONS} interleaved repetitions of ~${MEASURED_SECONDS} s each (after ${WARMUP_SECONDS} s warm-ups), medians`,
      ].join('\n'),
    )
    for (const subject of subjects) {
      const indexes = await subject.sql<{ indexdef: string }[]>`
        select indexdef from pg_indexes where tablename = 'analytics_events' order by indexname`
      console.log(
        [
          `${subject.label}: analytics_events indexes`,
          ...indexes.map((i) => `  ${i.indexdef.replace(' ON public.analytics_events USING btree', '')}`),
        ].join('\n'),
      )
    }

    const results = new Map<Subject, Runs>(subjects.map((s) => [s, { whoami: [], single: [], batch: [], copy: [], writer: [] }]))
    for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
      for (const subject of subjects) {
        const runs = results.get(subject)!
        const whoami = await measureWhoami(subject)
        runs.whoami.push(whoami)
        console.log(`${repetition}/${REPETITIONS} ${subject.label}: whoami c${WHOAMI_CONNECTIONS}: ${whoami.detail}`)
        const single = await measureIngest(subject, SINGLE)
        runs.single.push(single.run)
        console.log(`    ${SINGLE.label} c${SINGLE.connections}: ${single.run.detail}`)
        // The floor is the single events' ceiling; the batches' is a client's COPY.
        if (subject.kind === 'floor') continue
        const batch = await measureIngest(subject, BATCH)
        runs.batch.push(batch.run)
        console.log(`    ${BATCH.label} c${BATCH.connections}: ${batch.run.detail}`)
        const rows = await storedRows(subject, batch.businessId)
        const copy = await measureClientCopy(subject, rows)
        runs.copy.push(copy)
        console.log(`    a client's COPY of the same rows: ${copy.detail}`)
        if (subject === subjects[0]) {
          const writer = await measureWriterAlone(subject, rows)
          runs.writer.push(writer)
          console.log(`    this tree's event writer alone, the same rows: ${writer.detail}`)
        }
      }
    }

    const median = (list: Run[]) => medianOf(list.map((r) => r.perSecond))
    const p99 = (list: Run[]) => {
      const values = list.flatMap((r) => (r.p99Us === null ? [] : [r.p99Us]))
      return values.length === 0 ? '' : `${(medianOf(values) / 1000).toFixed(2)} ms`
    }
    const each = (list: Run[]) => list.map((r) => format(r.perSecond)).join(', ')
    const rows = (label: string, runs: Runs) => [
      `| ${label} | whoami, public key + allowed Origin, c${WHOAMI_CONNECTIONS} (requests) | ${format(median(runs.whoami))} | ${p99(runs.whoami)} | ${each(runs.whoami)} |`,
      `| ${label} | ${SINGLE.label}, c${SINGLE.connections} (events) | ${format(median(runs.single))} | ${p99(runs.single)} | ${each(runs.single)} |`,
      ...(runs.batch.length === 0
        ? []
        : [
            `| ${label} | ${BATCH.label}, c${BATCH.connections} (events) | ${format(median(runs.batch))} | ${p99(runs.batch)} | ${each(runs.batch)} |`,
            `| ${label} | a client's COPY of the same rows, ${ROWS_PER_STATEMENT} per statement, ${CLIENT_COPY_CONNECTIONS} connections (rows) | ${format(median(runs.copy))} | | ${each(runs.copy)} |`,
          ]),
      ...(runs.writer.length === 0
        ? []
        : [
            `| ${label} | its event writer alone, no HTTP, the same rows, ${ROWS_PER_STATEMENT} per batch, ${STATEMENTS_IN_FLIGHT} in flight (rows) | ${format(median(runs.writer))} | | ${each(runs.writer)} |`,
          ]),
    ]
    const valid = [...results.values()].every((runs) => Object.values(runs).every((list: Run[]) => list.every((r) => r.valid)))
    console.log(
      [
        '',
        '| Service | What | per second (median) | p99 (median) | each run |',
        '|---|---|---|---|---|',
        ...subjects.flatMap((subject) => rows(subject.label, results.get(subject)!)),
        '',
        ...subjects.flatMap((subject) => {
          const runs = results.get(subject)!
          if (subject.kind === 'floor') {
            const service = results.get(subjects[0]!)!
            return [
              `${subject.label}: 1-event POSTs / its whoami: ${(median(runs.single) / median(runs.whoami)).toFixed(2)} (the most the 0.5 aim can reach here)`,
              `this tree's 1-event POSTs / the floor's: ${(median(service.single) / median(runs.single)).toFixed(2)}`,
            ]
          }
          return [
            `${subject.label}: 1-event POSTs / whoami: ${(median(runs.single) / median(runs.whoami)).toFixed(2)} (aim: at least 0.5)`,
            `${subject.label}: 50-event batches / a client's COPY: ${(median(runs.batch) / median(runs.copy)).toFixed(2)} (aim: at least 0.85)`,
            ...(runs.writer.length === 0
              ? []
              : [
                  `${subject.label}: its event writer alone, no HTTP / a client's COPY: ${(median(runs.writer) / median(runs.copy)).toFixed(2)} (the ceiling of the line above for this writer)`,
                  `${subject.label}: 50-event batches / its event writer alone: ${(median(runs.batch) / median(runs.writer)).toFixed(2)}`,
                ]),
          ]
        }),
        `load average at the end: ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}`,
        ...(valid ? [] : ['', 'INVALID: some run had failed answers or fewer rows than answers; see the lines above.']),
      ].join('\n'),
    )
    return valid ? 0 : 1
  } finally {
    stopChildren()
    for (const subject of subjects) await subject.sql.end({ timeout: 5 })
    rmSync(workDir, { recursive: true, force: true })
  }

  async function startSubject(label: string, url: string, cwd?: string): Promise<Subject> {
    await ensureDatabase(url)
    const service = await startService({ env: { DATABASE_URL: url }, cwd })
    const { admin } = service
    const whoamiKey = await admin.createKey(await admin.createBusiness(`ingest bench whoami ${stamp}`), 'whoami', UNLIMITED)
    return {
      label,
      kind: 'service',
      base: service.base,
      pid: service.process.pid,
      url,
      sql: postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 }),
      whoamiKey,
      async runKey(name) {
        const businessId = await admin.createBusiness(`ingest bench ${name} ${stamp}`)
        return { key: await admin.createKey(businessId, name, UNLIMITED), businessId }
      },
    }
  }

  /**
   * The single events' floor on this tree's (migrated) database: the contract's native
   * work, the body's parse and check, and a commit of its rows by the service's insert
   * statement before the 202 (bench/floor-commit.ts); no key check, budget or counter. Its
   * rows carry one business of their own and a key it never looks up.
   */
  async function startFloor(url: string): Promise<Subject> {
    const businessId = crypto.randomUUID()
    const floor = await startServer(onCore(0, [process.execPath, 'bench/bare-elysia.ts']), {
      PORT: '0',
      FLOOR_AT_TURN_END: '1',
      FLOOR_DATABASE_URL: url,
      FLOOR_BUSINESS: businessId,
      FLOOR_KEY: crypto.randomUUID(),
    })
    const key = `pk_floor_${crypto.randomUUID()}`
    return {
      label: 'the floor committing its rows',
      kind: 'floor',
      base: floor.base,
      pid: floor.process.pid,
      url,
      sql: postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 }),
      whoamiKey: key,
      runKey: async () => ({ key, businessId }),
    }
  }

  /** The service's process and the database's backends (this database's only: others run tests on the same server). */
  async function cpuMeter({ pid, sql }: Subject) {
    const backends = (
      await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    ).map((r) => r.pid)
    const serviceBefore = cpuSecondsOf([pid])
    const databaseBefore = cpuSecondsOf(backends)
    return (units: number) => {
      const serviceAfter = cpuSecondsOf([pid])
      const databaseAfter = cpuSecondsOf(backends)
      const per = (before: number | null, after: number | null) =>
        before === null || after === null ? 'n/a' : `${(((after - before) * 1e6) / units).toFixed(1)} µs`
      return `CPU per event: service ${per(serviceBefore, serviceAfter)}, PostgreSQL backends ${per(databaseBefore, databaseAfter)}`
    }
  }

  async function measureWhoami({ base, whoamiKey: key }: Subject): Promise<Run> {
    const headers = ['-H', `Authorization: Bearer ${key}`, '-H', `Origin: ${ORIGIN}`]
    const script = join(root, 'bench', 'wrk-report.lua')
    const url = `${base}/api/v0/whoami`
    await wrk(['-t1', `-c${WHOAMI_CONNECTIONS}`, `-d${WARMUP_SECONDS}s`, '-s', script, ...headers, url])
    const text = await wrk(['-t1', `-c${WHOAMI_CONNECTIONS}`, `-d${MEASURED_SECONDS}s`, '-s', script, ...headers, url])
    const report = parseReport<WhoamiReport>(text, '{"requests"')
    const failed = report.statusErrors + report.connectErrors + report.readErrors + report.writeErrors + report.timeouts
    const perSecond = report.requests / (report.durationUs / 1e6)
    return {
      perSecond,
      p99Us: report.p99Us,
      detail: `${format(perSecond)} req/s, p99 ${ms(report.p99Us)}${failed > 0 ? `, ${failed} FAILED` : ''}`,
      valid: failed === 0,
    }
  }

  async function measureIngest(subject: Subject, shape: IngestShape): Promise<{ run: Run; businessId: string }> {
    const { base, sql } = subject
    const event = { eventType: 'page_view', url: `${ORIGIN}/products/42`, anonymousId: 'anon-bench', properties: { plan: 'pro', n: 1 } }
    const body = JSON.stringify(shape.eventsPerRequest === 1 ? event : { events: Array(shape.eventsPerRequest).fill(event) })
    const warmKey = (await subject.runKey('warm-up')).key
    await expectAccepted(base, warmKey, body)
    const warm = await runIngestWrk(base, warmKey, body, shape.connections, 0, WARMUP_SECONDS)
    // Let the warm-up's cut-off requests finish before the measured run starts.
    await Bun.sleep(300)
    const budget = Math.max(shape.connections * 4, Math.round((warm.report.accepted / (warm.report.durationUs / 1e6)) * MEASURED_SECONDS))
    const { key, businessId } = await subject.runKey(shape.label)
    // Counted before and after: the floor's rows of every run share its one business.
    const stored = async () => {
      const [row] = await sql<{ rows: number; commits: number }[]>`
        select count(*)::int as rows, count(distinct xmin::text)::int as commits
        from analytics_events where business_id = ${businessId}::uuid`
      return row!
    }
    // The deadline only matters if the budget never completes (lost answers, a stall).
    const deadline = Math.ceil(MEASURED_SECONDS * 4 + 5)
    const before = await stored()
    const cpu = await cpuMeter(subject)
    const { report, seconds } = await runIngestWrk(base, key, body, shape.connections, budget, deadline)
    const after = await stored()
    const rows = after.rows - before.rows
    const commits = after.commits - before.commits
    const cpuPerEvent = cpu(rows)
    const expected = report.accepted * shape.eventsPerRequest
    const valid = report.refused === 0 && report.socketErrors === 0 && report.accepted === budget && rows >= expected
    const perSecond = rows / seconds
    return {
      businessId,
      run: {
        perSecond,
        p99Us: report.p99Us,
        detail:
          `${format(perSecond)} events/s, p50 ${ms(report.p50Us)}, p99 ${ms(report.p99Us)}; ` +
          `${report.accepted} of ${budget} POSTs answered 202, ${report.refused} other, ${report.socketErrors} socket errors; ` +
          `${rows} rows stored${rows >= expected ? ` (>= 2xx x ${shape.eventsPerRequest})` : ` FEWER THAN ${expected}`}, ` +
          `${(rows / Math.max(commits, 1)).toFixed(1)} rows per commit; ${cpuPerEvent}`,
        valid,
      },
    }
  }

  /** The rows the service stored for `businessId`, as the writer takes them, with fresh ids of the same kind. */
  async function storedRows({ url }: Subject, businessId: string): Promise<EventRow[]> {
    const database = await openDatabase({ databaseUrl: url, dataDir: '', maxConnections: 1 })
    try {
      const stored = await database.db.select().from(analyticsEvents).where(eq(analyticsEvents.businessId, businessId))
      const otherBusiness = crypto.randomUUID()
      return stored.map((row) => ({
        id: Bun.randomUUIDv7(),
        business_id: otherBusiness,
        key_id: row.keyId,
        origin: row.origin,
        event_type: row.eventType,
        url: row.url,
        referrer: row.referrer,
        anonymous_id: row.anonymousId,
        person_id: row.personId,
        properties: row.properties as Record<string, unknown>,
        occurred_at: row.occurredAt.toISOString(),
        received_at: row.receivedAt.toISOString(),
        untimed: false,
      }))
    } finally {
      await database.close()
    }
  }

  /** `rows` in batches of ROWS_PER_STATEMENT, `write` on STATEMENTS_IN_FLIGHT lanes; rows/s timed by this process. */
  async function timedLanes(
    rows: readonly EventRow[],
    lanes: number,
    write: (batch: EventRow[]) => Promise<void>,
    cpu: () => number | null,
  ): Promise<Run> {
    const batches: EventRow[][] = []
    for (let first = 0; first < rows.length; first += ROWS_PER_STATEMENT) batches.push(rows.slice(first, first + ROWS_PER_STATEMENT))
    const cpuBefore = cpu()
    const started = performance.now()
    let next = 0
    const lane = async () => {
      while (next < batches.length) await write(batches[next++]!)
    }
    await Promise.all(Array.from({ length: lanes }, lane))
    const seconds = (performance.now() - started) / 1000
    const cpuAfter = cpu()
    const perSecond = rows.length / seconds
    const perRow = cpuBefore === null || cpuAfter === null ? 'n/a' : `${(((cpuAfter - cpuBefore) * 1e6) / rows.length).toFixed(1)} µs`
    return {
      perSecond,
      p99Us: null,
      detail: `${format(perSecond)} rows/s (${rows.length} rows in ${seconds.toFixed(2)} s, timed by this process); PostgreSQL backends' CPU per row ${perRow}`,
      valid: rows.length > 0,
    }
  }

  /** This database's backends but `sql`'s own session (others on the server run tests). */
  async function backendPids(sql: postgres.Sql): Promise<number[]> {
    const rows = await sql<
      { pid: number }[]
    >`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    return rows.map((r) => r.pid)
  }

  /**
   * The batches' ceiling: a client (this process, on postgres.js) sending the same rows as
   * text COPY, ROWS_PER_STATEMENT rows a statement, each its own commit, on
   * CLIENT_COPY_CONNECTIONS connections; building the COPY text is part of the client's work.
   */
  async function measureClientCopy({ url, sql: subjectSql }: Subject, rows: readonly EventRow[]): Promise<Run> {
    const client = postgres(url, { max: CLIENT_COPY_CONNECTIONS, onnotice: () => {}, connect_timeout: 5 })
    const fresh = rows.map((row) => ({ ...row, id: Bun.randomUUIDv7() }))
    try {
      // Both connections open before the clock starts.
      await Promise.all(Array.from({ length: CLIENT_COPY_CONNECTIONS }, () => client`select pg_sleep(0.01)`))
      const backends = await backendPids(subjectSql)
      return await timedLanes(
        fresh,
        CLIENT_COPY_CONNECTIONS,
        async (batch) => {
          const stream = await client.unsafe(COPY_EVENTS).writable()
          await new Promise<void>((resolve, reject) => {
            stream.on('error', reject)
            stream.on('finish', resolve)
            stream.end(copyText(batch))
          })
        },
        () => cpuSecondsOf(backends),
      )
    } finally {
      await client.end({ timeout: 5 })
    }
  }

  /** The service's event writer (`eventWriter`, COPY where it goes by COPY) fed the same rows from this process. */
  async function measureWriterAlone({ url, sql: subjectSql }: Subject, rows: readonly EventRow[]): Promise<Run> {
    const database = await openDatabase({ databaseUrl: url, dataDir: '', maxConnections: STATEMENTS_IN_FLIGHT })
    const fresh = rows.map((row) => ({ ...row, id: Bun.randomUUIDv7() }))
    try {
      const write = eventWriter(database.db, database.copyIn)
      await Promise.all(Array.from({ length: STATEMENTS_IN_FLIGHT }, () => database.db.execute(sql`select pg_sleep(0.01)`)))
      const backends = await backendPids(subjectSql)
      return await timedLanes(fresh, STATEMENTS_IN_FLIGHT, write, () => cpuSecondsOf(backends))
    } finally {
      await database.close()
    }
  }

  /**
   * wrk against POST /api/v0/analytics. With a budget, reads wrk's output as it comes and,
   * once the script says every POST is answered, interrupts wrk (which then reports as
   * usual); `seconds` is the time from start until then (else until wrk exited by itself).
   * No database polling: a count every 50 ms would take CPU from the run it measures.
   */
  async function runIngestWrk(
    base: string,
    key: string,
    body: string,
    connections: number,
    budget: number,
    seconds: number,
  ): Promise<{ report: IngestReport; seconds: number }> {
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
    const stderr = new Response(child.stderr).text()
    let stdout = ''
    let elapsed: number | null = null
    const decoder = new TextDecoder()
    for await (const chunk of child.stdout) {
      stdout += decoder.decode(chunk, { stream: true })
      if (elapsed === null && budget > 0 && stdout.includes('budget answered\n')) {
        elapsed = (performance.now() - started) / 1000
        child.kill('SIGINT')
      }
    }
    await child.exited
    stdout += await stderr
    const report = parseReport<IngestReport>(stdout, '{"durationUs"')
    return { report, seconds: elapsed ?? report.durationUs / 1e6 }
  }
}

async function wrk(args: string[]): Promise<string> {
  const child = killOnExit(Bun.spawn(onCore(1, ['wrk', ...args]), { stdout: 'pipe', stderr: 'pipe' }))
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`wrk exited ${code}: ${stderr}`)
  return stdout + stderr
}

function parseReport<Report>(text: string, prefix: string): Report {
  const line = text.split('\n').find((l) => l.startsWith(prefix))
  if (!line) throw new Error(`wrk printed no report:\n${text}`)
  return JSON.parse(line) as Report
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

function ms(us: number): string {
  return `${(us / 1000).toFixed(2)} ms`
}

function format(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

await runBenchmark(main)
