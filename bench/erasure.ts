/**
 * How long an erasure takes against a business holding many events (the promise:
 * within a minute per million events of the business).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_db bun bench/erasure.ts [events] [person's events]
 *
 * Fills a fresh business with `events` events over 400 days (default 1,000,000), `person's
 * events` of them (default 2,000) the person's, spread over the whole span; then times the
 * worker from the request to done. Run it on a database of its own: it adds rows.
 */
import { createScheduler } from '../src/background/scheduler.ts'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { businesses } from '../db/schema/index.ts'
import { createErasures } from '../src/events/erasure.ts'

const total = Number(process.argv[2] ?? 1_000_000)
const personal = Number(process.argv[3] ?? 2_000)
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL to a database of its own')
const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
await migrate(database)
const { db } = database
const [business] = await db.insert(businesses).values({ name: 'erasure bench' }).returning()
const keyId = crypto.randomUUID()
const started = performance.now()
// One statement per 100,000 rows: each stays well inside the statement timeout.
for (let from = 0; from < total; from += 100_000) {
  await database.background.execute(sql`
    insert into analytics_events (id, business_id, key_id, event_type, url, anonymous_id, person_id, occurred_at, received_at)
    select gen_random_uuid(), ${business!.id}::uuid, ${keyId}::uuid, 'page_view', 'https://www.example.com/pricing',
      'anon-' || (i % 50000), case when i % ${Math.max(1, Math.floor(total / personal))}::int = 0 then 'the-person' else 'user-' || (i % 20000) end,
      now() - make_interval(secs => (i::float8 / ${total}::float8) * 400 * 86400), now() - make_interval(secs => (i::float8 / ${total}::float8) * 400 * 86400)
    from generate_series(${from}::int, ${Math.min(from + 100_000, total) - 1}::int) as i`)
}
await database.background.execute(sql`analyze analytics_events`)
console.log(`filled ${total} events in ${Math.round(performance.now() - started)} ms`)

const scheduler = createScheduler({ database, onError: (job, error) => console.error(job, error) })
const erasures = createErasures({ events: database, service: database.background }, scheduler, { settleMs: 0 })
const at = performance.now()
const request = await erasures.request(business!.id, { personId: 'the-person' }, { actor: 'admin' })
let record = await erasures.get(business!.id, request.id)
while (record.status === 'pending') {
  await Bun.sleep(100)
  record = await erasures.get(business!.id, request.id)
}
console.log(`erased ${record.deleted} of ${total} events in ${Math.round(performance.now() - at)} ms`)
await erasures.close()
await scheduler.stop()
await database.close()
