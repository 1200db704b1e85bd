/**
 * Which partition width for analytics_events (issue 31): a day, a week or a month?
 * Builds the event table four times on PostgreSQL (unpartitioned, and partitioned by
 * day, week and month, each with partitions for 400 days back and 2 ahead, the default
 * retention), fills each with the same events spread over the last 90 days, and measures:
 * the insert rate of events at the current time (where ingestion writes), the insert rate
 * of events spread over the 90 days, the first page of `GET /api/v0/analytics` (the
 * service's own query: one business, newest first, 100 rows, with and without a type),
 * and the partition count. Each in the same run, interleaved, medians.
 *
 *   bun bench/partition-width.ts            (BENCH_EVENTS=2000000 by default)
 */
import postgres from 'postgres'
import { median } from './measure.ts'
import { runBenchmark } from './support.ts'

const base = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test_part'
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000_000)
const BUSINESSES = 20
const RETENTION_DAYS = 400
const WIDTHS = ['none', 'day', 'week', 'month'] as const
type Width = (typeof WIDTHS)[number]

const columns = `id uuid not null, business_id uuid not null, key_id uuid not null, origin text, event_type text not null,
  url text, referrer text, anonymous_id text, person_id text, properties jsonb not null default '{}'::jsonb,
  occurred_at timestamp(3) with time zone not null, received_at timestamp with time zone not null`

/** Business i's id: fixed, so every table holds the same businesses. */
const business = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`

function rows(count: number, spreadDays: number, table: string): string {
  // Typical page views: a URL, a referrer now and then, an anonymous id, small properties.
  return `insert into ${table} select gen_random_uuid(), ('00000000-0000-4000-8000-' || lpad((g % ${BUSINESSES})::text, 12, '0'))::uuid,
      '00000000-0000-4000-8000-00000000ffff'::uuid, 'https://example.com',
      case when g % 10 = 0 then 'signup' else 'page_view' end,
      'https://example.com/blog/post-' || (g % 500), case when g % 3 = 0 then 'https://www.google.com/' end,
      md5(g::text), null, jsonb_build_object('title', 'Post ' || (g % 500)),
      now() - (random() * ${spreadDays * 86400}) * interval '1 second', now()
    from generate_series(1, ${count}) g`
}

async function setUp(sql: postgres.Sql, width: Width): Promise<number> {
  const table = `events_${width}`
  await sql.unsafe(`drop table if exists ${table}`)
  if (width === 'none') {
    await sql.unsafe(`create table ${table} (${columns}, primary key (business_id, occurred_at, id))`)
  } else {
    await sql.unsafe(`create table ${table} (${columns}, primary key (business_id, occurred_at, id)) partition by range (occurred_at)`)
    let start = new Date(Date.now() - RETENTION_DAYS * 86_400_000)
    start = truncate(start, width)
    const end = Date.now() + 2 * 86_400_000
    for (let from = start; from.getTime() < end; ) {
      const to = step(from, width)
      await sql.unsafe(
        `create table ${table}_${from.toISOString().slice(0, 10).replaceAll('-', '')} partition of ${table} for values from ('${from.toISOString()}') to ('${to.toISOString()}')`,
      )
      from = to
    }
  }
  await sql.unsafe(`create index on ${table} (business_id, event_type, occurred_at desc, id desc)`)
  const [count] = await sql.unsafe(`select count(*)::int as n from pg_inherits where inhparent = '${table}'::regclass`)
  return count!.n as number
}

function truncate(at: Date, width: Width): Date {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), width === 'month' ? 1 : at.getUTCDate()))
  if (width === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7))
  return d
}

function step(from: Date, width: Width): Date {
  const d = new Date(from)
  if (width === 'day') d.setUTCDate(d.getUTCDate() + 1)
  else if (width === 'week') d.setUTCDate(d.getUTCDate() + 7)
  else d.setUTCMonth(d.getUTCMonth() + 1)
  return d
}

async function timed(task: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await task()
  return performance.now() - start
}

async function firstPage(sql: postgres.Sql, table: string, typed: boolean): Promise<number> {
  // The service's query (src/events/read.ts), prepared as postgres.js prepares it.
  const samples: number[] = []
  for (let i = 0; i < 15; i++) {
    const id = business(i % BUSINESSES)
    samples.push(
      await timed(() =>
        typed
          ? sql.unsafe(
              `select * from ${table} where business_id = $1 and event_type = $2 order by occurred_at desc, id desc limit 101`,
              [id, 'signup'],
              { prepare: true },
            )
          : sql.unsafe(`select * from ${table} where business_id = $1 order by occurred_at desc, id desc limit 101`, [id], {
              prepare: true,
            }),
      ),
    )
  }
  return median(samples)
}

await runBenchmark(async () => {
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  const url = new URL(base)
  url.pathname = '/test_part_bench_width'
  await admin.unsafe('drop database if exists test_part_bench_width with (force)')
  await admin.unsafe('create database test_part_bench_width')
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
  try {
    const results: Record<string, { partitions: number; nowRate: number[]; spreadRate: number[]; page: number[]; typed: number[] }> = {}
    for (const width of WIDTHS) {
      results[width] = { partitions: await setUp(sql, width), nowRate: [], spreadRate: [], page: [], typed: [] }
    }
    // Filled in slices, the tables taking turns, so each slice's timing meets the same machine.
    const slices = 4
    for (let s = 0; s < slices; s++) {
      for (const width of WIDTHS) {
        const ms = await timed(() => sql.unsafe(rows(EVENTS / slices, 90, `events_${width}`)))
        results[width]!.spreadRate.push((EVENTS / slices / ms) * 1000)
      }
    }
    for (const width of WIDTHS) await sql.unsafe(`vacuum analyze events_${width}`)
    const now = 100_000
    for (let r = 0; r < 3; r++) {
      for (const width of WIDTHS) {
        const ms = await timed(() => sql.unsafe(rows(now, 0.001, `events_${width}`)))
        results[width]!.nowRate.push((now / ms) * 1000)
        results[width]!.page.push(await firstPage(sql, `events_${width}`, false))
        results[width]!.typed.push(await firstPage(sql, `events_${width}`, true))
      }
    }
    console.log(
      `${EVENTS} events over 90 days, ${BUSINESSES} businesses; load ${(await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')}`,
    )
    console.log('width  partitions  insert now (ev/s)  insert over 90 d (ev/s)  first page (ms)  first page by type (ms)')
    for (const width of WIDTHS) {
      const r = results[width]!
      console.log(
        `${width.padEnd(6)} ${String(r.partitions).padStart(10)}  ${Math.round(median(r.nowRate)).toLocaleString('en').padStart(17)}  ${Math.round(median(r.spreadRate)).toLocaleString('en').padStart(23)}  ${median(r.page).toFixed(2).padStart(15)}  ${median(r.typed).toFixed(2).padStart(23)}`,
      )
    }
    return 0
  } finally {
    await sql.end()
    await admin.unsafe('drop database if exists test_part_bench_width with (force)')
    await admin.end()
  }
})
