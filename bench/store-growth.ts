/**
 * How reads hold up as one PostgreSQL's event store grows (docs/scaling.md, "What one machine
 * carries"): the store is filled step by step to BENCH_STEPS events (1, 10, 25 and 50
 * million by default; page views of 10 businesses over a year, bench/event-fill.ts), and
 * after each step, on the same machine in the same run:
 * - the first page of `GET /api/v0/analytics?limit=100`, and with `&type=signup`, through
 *   the service (one business's events, a tenth of the store);
 * - a day's counts by event type for that business (the query a dashboard chart would send),
 *   straight to PostgreSQL;
 * - the fill's rate, the bytes an event takes (table and indexes, every partition) and the
 *   database's size.
 *
 *   bun bench/store-growth.ts        (BENCH_STEPS=1000000,10000000,25000000,50000000; REPEATS=15)
 *
 * Database: bench_store_growth beside DATABASE_URL's, made afresh and dropped at the end
 * (BENCH_KEEP=1 keeps it). 50 million events take about 24 GB of disk.
 */
import postgres from 'postgres'
import { fillEvents } from './event-fill.ts'
import { median } from './measure.ts'
import { databaseNamed, databaseUrl, runBenchmark, startService } from './support.ts'

const STEPS = (process.env.BENCH_STEPS ?? '1000000,10000000,25000000,50000000').split(',').map(Number)
const TOTAL = STEPS.at(-1)!
const REPEATS = Number(process.env.REPEATS ?? 15)
const BUSINESSES = 10
const DAYS = 365
const CHUNK = 1_000_000
const NAME = 'bench_store_growth'

interface Step {
  events: number
  fillRate: number
  page: number
  typed: number
  dayCounts: number
  bytesPerEvent: number
  databaseBytes: number
}

await runBenchmark(async () => {
  const admin = postgres(databaseNamed(databaseUrl, 'postgres'), { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists ${NAME} with (force)`)
  await admin.unsafe(`create database ${NAME}`)
  const url = databaseNamed(databaseUrl, NAME)
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const service = await startService({ env: { DATABASE_URL: url } })
    const businesses: string[] = []
    for (let i = 0; i < BUSINESSES; i++) businesses.push(await service.admin.createBusiness(`Business ${i}`))
    const key = await service.admin.createKey(businesses[0]!, 'reader', { type: 'private', scopes: ['ANALYTICS_READ'], allowedOrigins: [] })
    const keyId = crypto.randomUUID()

    const firstPage = async (query: string): Promise<number> => {
      const start = performance.now()
      const response = await fetch(`${service.base}/api/v0/analytics?limit=100${query}`, { headers: { authorization: `Bearer ${key}` } })
      const body = (await response.json()) as { data: unknown[] }
      const ms = performance.now() - start
      if (response.status !== 200 || body.data.length !== 100)
        throw new Error(`first page: ${response.status}, ${body.data?.length} events`)
      return ms
    }
    /** The business's events of the last whole day stored, counted by type. */
    const dayCounts = async (): Promise<number> => {
      const start = performance.now()
      const rows = await sql`select event_type, count(*)::int as n from analytics_events
        where business_id = ${businesses[0]!}::uuid
          and occurred_at >= (select date_trunc('day', max(occurred_at)) - interval '1 day' from analytics_events where business_id = ${businesses[0]!}::uuid)
          and occurred_at < (select date_trunc('day', max(occurred_at)) from analytics_events where business_id = ${businesses[0]!}::uuid)
        group by event_type`
      const ms = performance.now() - start
      if (rows.length !== 2) throw new Error(`a day's counts: ${rows.length} types`)
      return ms
    }

    const steps: Step[] = []
    let filled = 0
    for (const target of STEPS) {
      const started = performance.now()
      for (; filled < target; filled = Math.min(filled + CHUNK, target)) {
        await sql.unsafe(fillEvents({ from: filled, count: Math.min(CHUNK, target - filled), total: TOTAL, days: DAYS, keyId, businesses }))
      }
      const fillRate = (target - (steps.at(-1)?.events ?? 0)) / ((performance.now() - started) / 1000)
      await sql.unsafe('vacuum analyze analytics_events')
      for (let i = 0; i < 3; i++) await firstPage('')
      const page: number[] = []
      const typed: number[] = []
      const counts: number[] = []
      for (let i = 0; i < REPEATS; i++) {
        page.push(await firstPage(''))
        typed.push(await firstPage('&type=signup'))
        counts.push(await dayCounts())
      }
      const [size] = await sql.unsafe(`select
          (select coalesce(sum(pg_total_relation_size(inhrelid)), 0) from pg_inherits where inhparent = 'analytics_events'::regclass)
            + pg_total_relation_size('analytics_events') as bytes,
          pg_database_size(current_database()) as database`)
      const step = {
        events: target,
        fillRate,
        page: median(page),
        typed: median(typed),
        dayCounts: median(counts),
        bytesPerEvent: Number(size!.bytes) / target,
        databaseBytes: Number(size!.database),
      }
      steps.push(step)
      console.log(`${target.toLocaleString('en')} events: ${JSON.stringify(step)}`)
    }

    const load = (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')
    console.log(`\n${BUSINESSES} businesses over ${DAYS} days (the reader's: a tenth); medians of ${REPEATS}; load at the end ${load}`)
    console.log(
      "| events stored | fill (events/s) | first page (ms) | by type (ms) | a day's counts (ms) | bytes an event | database (GB) |",
    )
    console.log('|---|---|---|---|---|---|---|')
    for (const s of steps) {
      console.log(
        `| ${s.events.toLocaleString('en')} | ${Math.round(s.fillRate).toLocaleString('en')} | ${s.page.toFixed(1)} | ${s.typed.toFixed(1)} | ${s.dayCounts.toFixed(1)} | ${Math.round(s.bytesPerEvent)} | ${(s.databaseBytes / 1e9).toFixed(1)} |`,
      )
    }
    const last = steps.at(-1)!
    console.log(`\nAt 1,000 events a second: ${((last.bytesPerEvent * 86_400_000) / 1e9).toFixed(1)} GB a day.`)
    return 0
  } finally {
    await sql.end()
    if (process.env.BENCH_KEEP !== '1') await admin.unsafe(`drop database if exists ${NAME} with (force)`).catch(() => {})
    await admin.end()
  }
})
