/**
 * Does the event maintenance slow ingestion (issue 31)? 50-event batches POSTed to the
 * service by CLIENTS concurrent clients, in phases of BENCH_SECONDS that take turns: one
 * with no maintenance, one with maintenance running back to back the whole phase, on real
 * work (300,000 rows past a business's 30-day retention, deleted in batches of 5,000, and a
 * partition past the operator's retention, detached and dropped), BENCH_REPETITIONS times.
 * Events per second and p50/p99 per phase, medians; every 202's events are checked stored.
 *
 *   bun bench/ingest-maintenance.ts    (BENCH_SECONDS=6, BENCH_REPETITIONS=3, CLIENTS=16)
 *
 * Database: test_part_bench_ingest beside DATABASE_URL's, made afresh and dropped at the end.
 */
import postgres from 'postgres'
import { openDatabase } from '../db/client.ts'
import { maintainEvents } from '../src/events/maintenance.ts'
import { partitionName } from '../src/events/partitions.ts'
import { median } from './measure.ts'
import { ALLOWED_ORIGIN, databaseNamed, runBenchmark, startService } from './support.ts'

const base = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test_part'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6)
const REPETITIONS = Number(process.env.BENCH_REPETITIONS ?? 3)
const CLIENTS = Number(process.env.CLIENTS ?? 16)
const EXPIRED_ROWS = 300_000

const urlOf = (name: string): string => databaseNamed(base, name)

interface Phase {
  maintenance: boolean
  events: number
  seconds: number
  latencies: number[]
  failed: number
  work: string
}

await runBenchmark(async () => {
  const admin = postgres(urlOf('postgres'), { max: 1, onnotice: () => {} })
  await admin.unsafe('drop database if exists test_part_bench_ingest with (force)')
  await admin.unsafe('create database test_part_bench_ingest')
  const url = urlOf('test_part_bench_ingest')
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const database = await openDatabase({ databaseUrl: url, dataDir: '' })
  try {
    const service = await startService({ env: { DATABASE_URL: url } })
    const flood = await service.admin.createBusiness('Flood')
    // A budget no flood reaches: the rate limit is not what is measured.
    const key = await service.admin.createKey(flood, 'snippet', { rateLimit: { limit: 1_000_000, windowSeconds: 1 } })
    const short = await service.admin.createBusiness('Short retention')
    await sql`update businesses set event_retention_days = 30 where id = ${short}`
    const acknowledged: string[] = []
    const statuses = new Map<number, number>()

    async function seedWork(): Promise<void> {
      await sql.unsafe(`insert into analytics_events (id, business_id, key_id, origin, event_type, url, anonymous_id, properties, occurred_at, received_at)
        select gen_random_uuid(), '${short}'::uuid, gen_random_uuid(), 'https://www.example.com', 'page_view',
               'https://www.example.com/p/' || (g % 500), md5((g / 7)::text), jsonb_build_object('title', 'Post ' || (g % 500)),
               now() - interval '31 days' - (g % 100000) * interval '20 seconds', now()
        from generate_series(1, ${EXPIRED_ROWS}) g`)
      const month = new Date(Date.UTC(2020, 0, 1))
      const next = new Date(Date.UTC(2020, 1, 1))
      await sql.unsafe(`create table if not exists ${partitionName(month)} partition of analytics_events
        for values from ('${month.toISOString()}') to ('${next.toISOString()}')`)
      await sql.unsafe(`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
        select gen_random_uuid(), '${short}'::uuid, gen_random_uuid(), 'page_view', '2020-01-15'::timestamptz, now() from generate_series(1, 50000)`)
      await sql.unsafe('analyze analytics_events')
    }

    async function phase(maintenance: boolean): Promise<Phase> {
      await seedWork()
      const result: Phase = { maintenance, events: 0, seconds: 0, latencies: [], failed: 0, work: '' }
      let running = true
      const client = async () => {
        while (running) {
          const events = Array.from({ length: 50 }, (_, i) => ({
            id: crypto.randomUUID(),
            eventType: 'page_view',
            url: `https://www.example.com/blog/post-${i}`,
            anonymousId: crypto.randomUUID(),
            timestamp: new Date().toISOString(),
            properties: { title: `Post ${i}` },
          }))
          const start = performance.now()
          const response = await fetch(`${service.base}/api/v0/analytics`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, origin: `https://www.${ALLOWED_ORIGIN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ events }),
          })
          await response.arrayBuffer()
          if (response.status === 202) for (const event of events) acknowledged.push(event.id)
          else {
            result.failed++
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
          }
          // Answers after the phase's end are checked, not counted.
          if (!running) break
          result.latencies.push(performance.now() - start)
          if (response.status === 202) result.events += events.length
        }
      }
      const started = performance.now()
      const clients = Array.from({ length: CLIENTS }, client)
      let deleted = 0
      let dropped = 0
      let runs = 0
      const upkeep = (async () => {
        while (maintenance && running) {
          const report = await maintainEvents(database, { serviceDb: database.db, retentionDays: 400 })
          if (report.failed.length > 0) throw new Error(`maintenance failed: ${report.failed.join(', ')}`)
          deleted += report.deleted
          dropped += report.dropped.length
          runs++
          await Bun.sleep(10)
        }
      })()
      await Bun.sleep(SECONDS * 1000)
      running = false
      result.seconds = (performance.now() - started) / 1000
      await Promise.all([...clients, upkeep])
      result.work = maintenance ? `${runs} runs, ${deleted.toLocaleString('en')} rows deleted, ${dropped} partitions dropped` : ''
      if (!maintenance) {
        // The work seeded for this phase is left to the next maintenance phase: clear it now, off the clock.
        await maintainEvents(database, { serviceDb: database.db, retentionDays: 400 })
      }
      return result
    }

    const phases: Phase[] = []
    await phase(false) // warm-up
    for (let r = 0; r < REPETITIONS; r++) {
      for (const maintenance of [false, true]) {
        const p = await phase(maintenance)
        phases.push(p)
        const sorted = [...p.latencies].sort((a, b) => a - b)
        console.log(
          `${maintenance ? 'with maintenance   ' : 'without maintenance'}  ${Math.round(p.events / p.seconds)
            .toLocaleString('en')
            .padStart(
              7,
            )} events/s  p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms  p99 ${sorted[Math.floor(sorted.length * 0.99)]!.toFixed(1)} ms  failed ${p.failed}  ${p.work}`,
        )
      }
    }
    const rate = (m: boolean) => median(phases.filter((p) => p.maintenance === m).map((p) => p.events / p.seconds))
    const p99 = (m: boolean) =>
      median(
        phases
          .filter((p) => p.maintenance === m)
          .map((p) => {
            const sorted = [...p.latencies].sort((a, b) => a - b)
            return sorted[Math.floor(sorted.length * 0.99)]!
          }),
      )
    const load = (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')
    console.log(`\n${CLIENTS} clients, 50-event batches, ${SECONDS} s phases x ${REPETITIONS}; load ${load}`)
    console.log(`without maintenance: ${Math.round(rate(false)).toLocaleString('en')} events/s, p99 ${p99(false).toFixed(1)} ms`)
    console.log(`with maintenance:    ${Math.round(rate(true)).toLocaleString('en')} events/s, p99 ${p99(true).toFixed(1)} ms`)
    console.log(`ratio with/without:  ${(rate(true) / rate(false)).toFixed(2)}`)
    const [stored] = await sql`select count(*)::int as n from analytics_events where business_id = ${flood}`
    const failed = phases.reduce((sum, p) => sum + p.failed, 0)
    console.log(
      `stored ${stored!.n.toLocaleString('en')} of the flood's events; acknowledged in measured phases and warm-up ${acknowledged.length.toLocaleString('en')}; failed answers ${failed}`,
    )
    return stored!.n === acknowledged.length && failed === 0 ? 0 : 1
  } finally {
    await database.close()
    await sql.end()
    await admin.unsafe('drop database if exists test_part_bench_ingest with (force)').catch(() => {})
    await admin.end()
  }
})
