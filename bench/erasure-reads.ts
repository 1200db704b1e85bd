/**
 * What pending erasures cost the business's own reads (docs/decisions.md, "Fair erasures,
 * cheap to read past"): the first page of `GET /api/v0/analytics?limit=1000` over
 * BENCH_EVENTS events (300,000 by default) of one business over 90 days, with no erasure
 * pending and with 100 (the most a business may have), served by the tree before the change
 * (COMPARE_TREE, else `git archive main`) and by this one, on PostgreSQL, same machine, same
 * run, the two trees and the two states taking turns.
 *
 *   bun bench/erasure-reads.ts        (BENCH_EVENTS=300000, ROUNDS=5; BENCH_KEEP=1 keeps the databases)
 *
 * Databases: <DATABASE_URL's name>_reads_before and _reads_after beside DATABASE_URL's,
 * made afresh and dropped at the end. The pending requests are rows written directly, held
 * for a day as if an instance worked on them (so no worker deletes anything while it runs),
 * each naming someone who has events, so the read hides a few hundred of them.
 */
import postgres from 'postgres'
import { median } from './measure.ts'
import { beforeTree, databaseNamed, root, runBenchmark, startService } from './support.ts'

const base = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/bench'
const EVENTS = Number(process.env.BENCH_EVENTS ?? 300_000)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const PENDING = 100
const PERSONS = 20_000
const DAYS = 90

const urlOf = (name: string): string => databaseNamed(base, name)

/** Page views of one business over the last DAYS days, in time order, PERSONS people each on many. */
function fill(businessId: string, keyId: string): string {
  return `insert into analytics_events (id, business_id, key_id, origin, event_type, url, anonymous_id, person_id, properties, occurred_at, received_at)
    select gen_random_uuid(), '${businessId}'::uuid, '${keyId}'::uuid, 'https://www.example.com', 'page_view',
      'https://www.example.com/blog/post-' || (g % 500), 'anon-' || (g % 50000), 'user-' || (g % ${PERSONS}),
      jsonb_build_object('title', 'Post ' || (g % 500)), t, t
    from generate_series(0, ${EVENTS - 1}) g,
      lateral (select now() - interval '${DAYS} days' + (g::float8 / ${EVENTS}) * interval '${DAYS} days' as t) at`
}

/** PENDING requests as another instance would have left them: half by personId, half by anonymousId. */
function pend(businessId: string): string {
  return `insert into analytics_erasures (business_id, person_id, anonymous_id, requested_by, claimed_until)
    select '${businessId}'::uuid, case when i % 2 = 0 then 'user-' || (i * 97) end, case when i % 2 = 1 then 'anon-' || (i * 89) end, 'admin',
      now() + interval '1 day'
    from generate_series(1, ${PENDING}) i`
}

interface Store {
  name: 'before' | 'after'
  sql: postgres.Sql
  base: string
  key: string
  businessId: string
  none: number[]
  pending: number[]
}

async function firstPage(store: Store): Promise<number> {
  const start = performance.now()
  const response = await fetch(`${store.base}/api/v0/analytics?limit=1000`, {
    headers: { authorization: `Bearer ${store.key}` },
    signal: AbortSignal.timeout(30_000),
  })
  const body = (await response.json()) as { data: unknown[] }
  const ms = performance.now() - start
  if (response.status !== 200 || body.data.length !== 1000)
    throw new Error(`${store.name}: ${response.status}, ${body.data?.length} events`)
  return ms
}

await runBenchmark(async () => {
  const prefix = decodeURIComponent(new URL(base).pathname.slice(1)) || 'bench'
  const admin = postgres(urlOf('postgres'), { max: 1, onnotice: () => {} })
  const stores: Store[] = []
  try {
    for (const name of ['before', 'after'] as const) {
      const database = `${prefix}_reads_${name}`
      await admin.unsafe(`drop database if exists "${database}" with (force)`)
      await admin.unsafe(`create database "${database}"`)
      const url = urlOf(database)
      const service = await startService({ env: { DATABASE_URL: url }, cwd: name === 'before' ? beforeTree() : root })
      const businessId = await service.admin.createBusiness('Reader')
      const key = await service.admin.createKey(businessId, 'reader', { type: 'private', scopes: ['ANALYTICS_READ'], allowedOrigins: [] })
      const sql = postgres(url, { max: 1, onnotice: () => {} })
      await sql.unsafe(fill(businessId, crypto.randomUUID()))
      await sql.unsafe('vacuum analyze')
      stores.push({ name, sql, base: service.base, key, businessId, none: [], pending: [] })
    }
    for (const store of stores) for (let i = 0; i < 3; i++) await firstPage(store)
    for (let round = 0; round < ROUNDS; round++) {
      for (const store of stores) {
        for (let i = 0; i < 3; i++) store.none.push(await firstPage(store))
        await store.sql.unsafe(pend(store.businessId))
        await firstPage(store) // the first read after the insert may plan afresh
        for (let i = 0; i < 3; i++) store.pending.push(await firstPage(store))
        await store.sql.unsafe(`delete from analytics_erasures where business_id = '${store.businessId}'`)
      }
    }
    const load = (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')
    console.log(`\n${EVENTS.toLocaleString('en')} events of one business over ${DAYS} days; first page of 1000; load ${load}`)
    console.log('tree     none pending (ms)  100 pending (ms)  100 / none')
    for (const store of stores) {
      const none = median(store.none)
      const pending = median(store.pending)
      console.log(
        `${store.name.padEnd(7)} ${none.toFixed(1).padStart(17)} ${pending.toFixed(1).padStart(17)} ${(pending / none).toFixed(2).padStart(11)}`,
      )
      console.log(
        `        none: ${store.none.map((ms) => ms.toFixed(0)).join(' ')}; 100: ${store.pending.map((ms) => ms.toFixed(0)).join(' ')}`,
      )
    }
    const [before, after] = stores
    console.log(
      `\nafter / before: none pending ${(median(after!.none) / median(before!.none)).toFixed(2)}, 100 pending ${(median(after!.pending) / median(before!.pending)).toFixed(2)}`,
    )
    return 0
  } finally {
    for (const store of stores) await store.sql.end()
    if (process.env.BENCH_KEEP !== '1') {
      for (const name of ['before', 'after'])
        await admin.unsafe(`drop database if exists "${prefix}_reads_${name}" with (force)`).catch(() => {})
    }
    await admin.end()
  }
})
