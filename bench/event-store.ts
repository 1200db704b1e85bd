/**
 * The event store before and after partitions (issue 31), on PostgreSQL, same machine, same
 * run: the first page of `GET /api/v0/analytics` (100 events, newest first, with and
 * without a type) over a store of BENCH_EVENTS events (10 million by default) spread over
 * a year across 10 businesses (in time order, as they arrive), served by the tree before partitions (COMPARE_TREE, else
 * `git archive main`) and by this one; the server-side insert rate of the fill; and the
 * bytes a stored event takes, table and indexes together, over every partition.
 *
 *   bun bench/event-store.ts        (BENCH_EVENTS=10000000, ROUNDS=5; BENCH_KEEP=1 keeps the databases)
 *
 * Databases: test_part_bench_before and test_part_bench_after beside DATABASE_URL's, made
 * afresh and dropped at the end.
 */
import postgres from 'postgres'
import { fillEvents } from './event-fill.ts'
import { median } from './measure.ts'
import { beforeTree, databaseNamed, root, runBenchmark, startService } from './support.ts'

const base = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test_part'
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const BUSINESSES = 10
const DAYS = 365
const CHUNK = 1_000_000

const urlOf = (name: string): string => databaseNamed(base, name)

interface Store {
  name: 'before' | 'after'
  sql: postgres.Sql
  base: string
  key: string
  businesses: string[]
  fillRates: number[]
  page: number[]
  typed: number[]
}

async function firstPage(store: Store, query: string): Promise<number> {
  const start = performance.now()
  const response = await fetch(`${store.base}/api/v0/analytics?limit=100${query}`, { headers: { authorization: `Bearer ${store.key}` } })
  const body = (await response.json()) as { data: unknown[] }
  const ms = performance.now() - start
  if (response.status !== 200 || body.data.length !== 100) throw new Error(`${store.name}: ${response.status}, ${body.data?.length} events`)
  return ms
}

await runBenchmark(async () => {
  const admin = postgres(urlOf('postgres'), { max: 1, onnotice: () => {} })
  const stores: Store[] = []
  try {
    for (const name of ['before', 'after'] as const) {
      await admin.unsafe(`drop database if exists test_part_bench_${name} with (force)`)
      await admin.unsafe(`create database test_part_bench_${name}`)
      const url = urlOf(`test_part_bench_${name}`)
      const service = await startService({ env: { DATABASE_URL: url }, cwd: name === 'before' ? beforeTree() : root })
      const businesses: string[] = []
      for (let i = 0; i < BUSINESSES; i++) businesses.push(await service.admin.createBusiness(`Business ${i}`))
      const key = await service.admin.createKey(businesses[0]!, 'reader', {
        type: 'private',
        scopes: ['ANALYTICS_READ'],
        allowedOrigins: [],
      })
      stores.push({
        name,
        sql: postgres(url, { max: 1, onnotice: () => {} }),
        base: service.base,
        key,
        businesses,
        fillRates: [],
        page: [],
        typed: [],
      })
    }
    const keyId = crypto.randomUUID()
    // Filled in chunks, the two stores taking turns, so that each chunk's rate meets the same machine.
    for (let from = 0; from < EVENTS; from += CHUNK) {
      const count = Math.min(CHUNK, EVENTS - from)
      for (const store of stores) {
        const start = performance.now()
        await store.sql.unsafe(fillEvents({ from, count, total: EVENTS, days: DAYS, keyId, businesses: store.businesses }))
        store.fillRates.push((count / (performance.now() - start)) * 1000)
      }
      console.log(`filled ${(from + count).toLocaleString('en')} of ${EVENTS.toLocaleString('en')}`)
    }
    for (const store of stores) await store.sql.unsafe('vacuum analyze')
    for (const store of stores) {
      // Warm: the first request of a process pays for its connections and plans.
      for (let i = 0; i < 3; i++) await firstPage(store, '')
      for (let i = 0; i < 3; i++) await firstPage(store, '&type=signup')
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const store of stores) {
        for (let i = 0; i < 5; i++) store.page.push(await firstPage(store, ''))
        for (let i = 0; i < 5; i++) store.typed.push(await firstPage(store, '&type=signup'))
      }
    }
    const load = (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')
    console.log(`\n${EVENTS.toLocaleString('en')} events over ${DAYS} days, ${BUSINESSES} businesses (the reader's: a tenth); load ${load}`)
    console.log('store   partitions  fill (ev/s)  first page (ms)  first page by type (ms)  bytes/event (table+indexes)')
    for (const store of stores) {
      const [size] = await store.sql.unsafe(`select
          (select count(*)::int from pg_inherits where inhparent = 'analytics_events'::regclass) as partitions,
          (select coalesce(sum(pg_total_relation_size(inhrelid)), 0) from pg_inherits where inhparent = 'analytics_events'::regclass)
            + pg_total_relation_size('analytics_events') as bytes,
          (select count(*) from analytics_events) as rows`)
      const bytesPerEvent = Number(size!.bytes) / Number(size!.rows)
      console.log(
        `${store.name.padEnd(7)} ${String(size!.partitions).padStart(10)}  ${Math.round(median(store.fillRates)).toLocaleString('en').padStart(11)}  ${median(store.page).toFixed(2).padStart(15)}  ${median(store.typed).toFixed(2).padStart(23)}  ${bytesPerEvent.toFixed(0).padStart(27)}`,
      )
      console.log(`        first pages: ${store.page.map((ms) => ms.toFixed(1)).join(' ')}`)
    }
    const [before, after] = stores
    console.log(
      `\nafter / before: first page ${(median(after!.page) / median(before!.page)).toFixed(2)}, by type ${(median(after!.typed) / median(before!.typed)).toFixed(2)}`,
    )
    return 0
  } finally {
    for (const store of stores) await store.sql.end()
    if (process.env.BENCH_KEEP !== '1') {
      for (const name of ['before', 'after'])
        await admin.unsafe(`drop database if exists test_part_bench_${name} with (force)`).catch(() => {})
    }
    await admin.end()
  }
})
