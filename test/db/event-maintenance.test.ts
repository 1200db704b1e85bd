import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { queryRows, sql, type Db } from '../../db/client.ts'
import { eventWriter, type EventRow } from '../../src/events/write.ts'
import { maintainEvents, scheduleEventMaintenance, type EventMaintenanceOptions } from '../../src/events/maintenance.ts'
import type { Job, JobOptions, Scheduler } from '../../src/background/scheduler.ts'
import { partitionName } from '../../src/events/partitions.ts'
import { SERVER_OPTIONS } from '../../src/http/server-options.ts'
import { ensureEventPartitions, testDatabase, testDatabaseUrl, testEventsDatabase, testEventsDatabaseUrl } from '../support/database.ts'
import { watchEventDeletes } from '../support/delete-statements.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'

// Partitions ahead of need, whole partitions dropped past the
// operator's retention, a business's shorter retention in bounded batches, untimed ids
// forgotten after 24 hours, one instance at a time, and none of it hurting ingestion.
const DAY = 86_400_000
const ORIGIN = 'https://www.example.com'

afterEach(async () => {
  // Tests here drop partitions the other files' events need: the default window comes back.
  await ensureEventPartitions(await testEventsDatabase())
})

function monthStart(at: number): Date {
  const d = new Date(at)
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1))
}

async function partitionNames(): Promise<string[]> {
  const { db } = await testEventsDatabase()
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'analytics_events'::regclass`,
  )
  return rows.map((row) => row.name).sort()
}

function row(businessId: string, keyId: string, occurred: number, more: Partial<EventRow> = {}): EventRow {
  const at = new Date(occurred).toISOString()
  return {
    id: crypto.randomUUID(),
    business_id: businessId,
    key_id: keyId,
    origin: ORIGIN,
    event_type: 'page_view',
    url: `${ORIGIN}/`,
    referrer: null,
    anonymous_id: null,
    person_id: null,
    properties: {},
    occurred_at: at,
    received_at: at,
    untimed: false,
    ...more,
  }
}

async function business(name: string, retentionDays: number | null = null) {
  const service = await testService()
  const id = await seedBusiness(service, name)
  const { db } = await testDatabase()
  if (retentionDays !== null) await db.execute(sql`update businesses set event_retention_days = ${retentionDays} where id = ${id}`)
  // A budget no flood reaches: the rate limit is not what these tests are about.
  const key = await seedKey(service, id, { rateLimit: { limit: 1_000_000, windowSeconds: 1 } })
  return { service, id, keyId: key.record.id, key: key.key }
}

async function storedTimes(businessId: string): Promise<number[]> {
  const { db } = await testEventsDatabase()
  const rows = await queryRows<{ at: number }>(
    db,
    sql`select round(extract(epoch from occurred_at) * 1000)::float8 as at from analytics_events where business_id = ${businessId} order by occurred_at`,
  )
  return rows.map((r) => Number(r.at))
}

/**
 * Runs `work` while eight clients post events of `flood` over HTTP, each request ten events
 * dated over the last 20 days; then checks that every request was answered 202 and that
 * every acknowledged event, and nothing else, is stored.
 */
async function duringFlood<T>(flood: Awaited<ReturnType<typeof business>>, work: () => Promise<T>): Promise<T> {
  const database = await testEventsDatabase()
  const now = Date.now()
  flood.service.app.listen({ hostname: '127.0.0.1', port: 0, ...SERVER_OPTIONS })
  const base = `http://127.0.0.1:${flood.service.app.server!.port}`
  const statuses = new Map<number, number>()
  const acknowledged = new Set<string>()
  let running = true
  let sent = 0
  async function client(): Promise<void> {
    while (running) {
      const events = Array.from({ length: 10 }, () => ({
        id: crypto.randomUUID(),
        eventType: 'page_view',
        timestamp: new Date(now - Math.floor(Math.random() * 20 * DAY)).toISOString(),
      }))
      sent++
      const response = await fetch(`${base}/api/v0/analytics`, {
        method: 'POST',
        headers: { authorization: `Bearer ${flood.key}`, origin: ORIGIN, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      })
      await response.arrayBuffer()
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      if (response.status === 202) for (const event of events) acknowledged.add(event.id)
    }
  }
  const clients = Array.from({ length: 8 }, client)
  let result: T
  try {
    await Bun.sleep(200)
    result = await work()
    await Bun.sleep(200)
  } finally {
    running = false
    await Promise.all(clients)
    flood.service.app.server?.stop(true)
    await flood.service.drain()
  }
  expect([...statuses.keys()]).toEqual([202])
  expect(sent).toBeGreaterThan(20)
  const stored = await queryRows<{ id: string }>(
    database.db,
    sql`select id::text as id from analytics_events where business_id = ${flood.id}`,
  )
  expect(stored.length).toBe(acknowledged.size)
  expect(new Set(stored.map((r) => r.id))).toEqual(acknowledged)
  return result
}

/** Where the maintenance's advisory lock is taken: the event store's database. */
async function eventsDatabaseUrl(): Promise<string | undefined> {
  return (await testEventsDatabaseUrl()) ?? (await testDatabaseUrl())
}

describe('event maintenance', () => {
  // The businesses and usage tables are on the service's database, the events on theirs (the same one unless EVENTS_DATABASE_URL).
  let serviceDb: Db
  beforeAll(async () => {
    serviceDb = (await testDatabase()).db
  })
  const options = (more: Partial<EventMaintenanceOptions> = {}): EventMaintenanceOptions => ({
    serviceDb,
    retentionDays: 400,
    pauseMs: 0,
    ...more,
  })

  test('after a run, every month from the retention back to the day after tomorrow has its partition, and the next month too', async () => {
    const database = await testEventsDatabase()
    // The clock 70 days on: the months ahead of today's partitions must appear (an earlier
    // run on this database may have made them: they go first).
    const needed = partitionName(new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 2, 1)))
    for (const name of await partitionNames()) {
      if (name > needed) await database.db.execute(sql`drop table ${sql.identifier(name)}`)
    }
    const now = Date.now() + 70 * DAY
    const report = await maintainEvents(database, options({ now: () => now }))
    expect(report.failed).toEqual([])
    const names = await partitionNames()
    const last = monthStart(now + DAY)
    const wanted: string[] = []
    for (let m = monthStart(now - 400 * DAY); m <= last; m = new Date(Date.UTC(m.getUTCFullYear(), m.getUTCMonth() + 1, 1))) {
      wanted.push(partitionName(m))
    }
    wanted.push(partitionName(new Date(Date.UTC(last.getUTCFullYear(), last.getUTCMonth() + 1, 1))))
    for (const name of wanted) expect(names).toContain(name)
    expect(report.created.length).toBeGreaterThan(0)
    // An event at the latest accepted time of that clock is stored.
    const b = await business('Ahead')
    await eventWriter(database.db)([row(b.id, b.keyId, now + 23 * 3_600_000)])
    expect(await storedTimes(b.id)).toEqual([now + 23 * 3_600_000])
    // A second run finds nothing to create.
    expect((await maintainEvents(database, options({ now: () => now }))).created).toEqual([])
  })

  test('a partition wholly past the retention is dropped whole; the months still kept stay', async () => {
    const database = await testEventsDatabase()
    const b = await business('Old')
    const now = Date.now()
    await eventWriter(database.db)([row(b.id, b.keyId, now - 100 * DAY), row(b.id, b.keyId, now - 10 * DAY)])
    const report = await maintainEvents(database, options({ retentionDays: 60 }))
    expect(report.failed).toEqual([])
    expect(report.dropped).toContain(partitionName(monthStart(now - 100 * DAY)))
    expect(report.dropped).not.toContain(partitionName(monthStart(now - 60 * DAY)))
    const names = await partitionNames()
    expect(names).not.toContain(partitionName(monthStart(now - 100 * DAY)))
    expect(names).toContain(partitionName(monthStart(now - 60 * DAY)))
    expect(await storedTimes(b.id)).toEqual([now - 10 * DAY])
    // Whole partitions only: no row was deleted one by one.
    expect(report.deleted).toBe(0)
  })

  test('a business with a shorter retention loses only its older events, in bounded batches; another business keeps all', async () => {
    const database = await testEventsDatabase()
    const short = await business('Short', 30)
    const long = await business('Long')
    const now = Date.now()
    const times = [now - 40 * DAY, now - 20 * DAY, now - DAY]
    const old = Array.from({ length: 12 }, (_, i) => now - (31 + i) * DAY)
    await eventWriter(database.db)([
      ...[...times, ...old].map((at) => row(short.id, short.keyId, at)),
      ...times.map((at) => row(long.id, long.keyId, at)),
    ])
    const deletes = await watchEventDeletes(database.db)
    const pauses: number[] = []
    try {
      const sleep = async (ms: number) => void pauses.push(ms)
      const report = await maintainEvents(database, options({ batchRows: 5, pauseMs: 40, sleep }))
      expect(report.failed).toEqual([])
      expect(report.deleted).toBe(13)
      // The 13 expired rows (each on its own millisecond) go in statements of at most 5.
      expect(await deletes.rowsPerStatement()).toEqual([5, 5, 3])
      // A pause after each full statement, so ingestion's statements pass in between: at
      // least pauseMs, at most a second.
      expect(pauses.length).toBe(2)
      for (const pause of pauses) expect(pause >= 40 && pause <= 1_000).toBe(true)
    } finally {
      await deletes.stop()
    }
    expect(await storedTimes(short.id)).toEqual([now - 20 * DAY, now - DAY])
    expect(await storedTimes(long.id)).toEqual(times)
  })

  test("a month partly past the operator's retention loses its expired rows in batches, during a flood; the rest stays", async () => {
    const database = await testEventsDatabase()
    const flood = await business('Flood')
    const old = await business('Old events')
    const other = await business('Other')
    // An operator retention whose cutoff falls mid-month: that month is partly expired and
    // kept as a partition, and what is older in it must go row by row.
    const now = Date.now()
    const day = new Date(now - 60 * DAY).getUTCDate()
    const retentionDays = 60 + (day - 15)
    const cutoff = now - retentionDays * DAY
    const month = partitionName(monthStart(cutoff))
    // 20,000 expired rows over the ten days before the cutoff; 5,000 kept ones an hour and
    // more after it, and 2,000 of another business: the same month, all three.
    await database.db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
      select gen_random_uuid(), ${old.id}::uuid, ${old.keyId}::uuid, 'page_view', t, t
      from (select ${new Date(cutoff).toISOString()}::timestamptz - g * interval '43 seconds' as t from generate_series(1, 20000) g) s`)
    await database.db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
      select gen_random_uuid(), ${old.id}::uuid, ${old.keyId}::uuid, 'page_view', t, t
      from (select ${new Date(cutoff).toISOString()}::timestamptz + interval '1 hour' + g * interval '1 minute' as t from generate_series(1, 5000) g) s`)
    await database.db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
      select gen_random_uuid(), ${other.id}::uuid, ${other.keyId}::uuid, 'page_view', t, t
      from (select ${new Date(cutoff).toISOString()}::timestamptz + interval '1 hour' + g * interval '2 minutes' as t from generate_series(1, 2000) g) s`)
    const counts = async (businessId: string) =>
      (
        await queryRows<{ total: number; expired: number }>(
          database.db,
          sql`select count(*)::int as total, (count(*) filter (where occurred_at < ${new Date(cutoff).toISOString()}::timestamptz))::int as expired
              from analytics_events where business_id = ${businessId}`,
        )
      )[0]!
    const otherBefore = await queryRows<{ id: string }>(
      database.db,
      sql`select id::text as id from analytics_events where business_id = ${other.id} order by id`,
    )
    expect(await counts(old.id)).toEqual({ total: 25_000, expired: 20_000 })

    const report = await duringFlood(flood, () => maintainEvents(database, options({ retentionDays, batchRows: 1_000, pauseMs: 5 })))
    expect(report.failed).toEqual([])
    expect(report.dropped).not.toContain(month)
    expect(await partitionNames()).toContain(month)
    expect(report.deleted).toBeGreaterThanOrEqual(20_000)
    expect(await counts(old.id)).toEqual({ total: 5_000, expired: 0 })
    const otherAfter = await queryRows<{ id: string }>(
      database.db,
      sql`select id::text as id from analytics_events where business_id = ${other.id} order by id`,
    )
    expect(otherAfter).toEqual(otherBefore)
    expect(otherAfter.length).toBe(2_000)
  }, 60_000)

  test('an id sent without timestamp is remembered 24 hours, then forgotten', async () => {
    const database = await testEventsDatabase()
    const b = await business('Untimed')
    const now = Date.now()
    await eventWriter(database.db)([row(b.id, b.keyId, now, { untimed: true }), row(b.id, b.keyId, now - 2 * DAY, { untimed: true })])
    const count = async () => (await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from analytics_untimed_ids`))[0]!.n
    expect(await count()).toBe(2)
    expect((await maintainEvents(database, options({ batchRows: 1 }))).forgotten).toBe(1)
    expect(await count()).toBe(1)
    expect((await maintainEvents(database, options({ now: () => now + 25 * 3_600_000 }))).forgotten).toBe(1)
    expect(await count()).toBe(0)
  })

  test('usage rows past their retention go in batches, by the run that holds the maintenance lock only; newer ones stay', async () => {
    const database = await testDatabase()
    const b = await business('Usage')
    const now = Date.now()
    const at = (days: number) => new Date(now - days * DAY).toISOString()
    // Each table: a row just past its retention, and one just inside it.
    for (const [table, old, kept] of [
      ['key_usage_minutes', 3, 1],
      ['key_usage_hours', 36, 34],
      ['key_usage_days', 401, 399],
    ] as const) {
      for (const days of [old, kept]) {
        await database.db.execute(
          sql`insert into ${sql.identifier(table)} (key_id, at, outcome, count) values (${b.keyId}, ${at(days)}::timestamptz, 'accepted', 1)`,
        )
      }
    }
    for (const days of [36, 34]) {
      await database.db.execute(sql`insert into key_refused_origins (key_id, origin, hour, reported, count, last_seen_at)
        values (${b.keyId}, 'https://other.example', ${at(days)}::timestamptz, false, 1, ${at(days)}::timestamptz)`)
      await database.db.execute(sql`insert into key_refused_ips (key_id, ip, hour, reported, count, last_seen_at)
        values (${b.keyId}, '192.0.2.1', ${at(days)}::timestamptz, false, 1, ${at(days)}::timestamptz)`)
      await database.db.execute(
        sql`insert into key_refused_others (key_id, hour, kind, count) values (${b.keyId}, ${at(days)}::timestamptz, 'origin', 1)`,
      )
    }
    // Each row left, as its table and its age in whole days.
    const left = async () =>
      (
        await queryRows<{ row: string }>(
          database.db,
          sql`select t || ' ' || round(extract(epoch from ${new Date(now).toISOString()}::timestamptz - at) / 86400)::int as row from (
                select 'minutes' as t, at from key_usage_minutes where key_id = ${b.keyId}
                union all select 'hours', at from key_usage_hours where key_id = ${b.keyId}
                union all select 'days', at from key_usage_days where key_id = ${b.keyId}
                union all select 'origins', hour from key_refused_origins where key_id = ${b.keyId}
                union all select 'ips', hour from key_refused_ips where key_id = ${b.keyId}
                union all select 'others', hour from key_refused_others where key_id = ${b.keyId}) u
              order by 1`,
        )
      ).map((r) => r.row)
    const all = [
      'days 399',
      'days 401',
      'hours 34',
      'hours 36',
      'ips 34',
      'ips 36',
      'minutes 1',
      'minutes 3',
      'origins 34',
      'origins 36',
      'others 34',
      'others 36',
    ]
    expect(await left()).toEqual(all)
    if ((await testEventsDatabase()).engine === 'postgres') {
      // Another instance holds the maintenance: this one deletes nothing.
      const other = postgres((await eventsDatabaseUrl())!, { max: 1, onnotice: () => {} })
      try {
        const session = await other.reserve()
        await session`select pg_advisory_lock(hashtext('keygate:event-maintenance'))`
        expect((await maintainEvents(await testEventsDatabase(), options({ batchRows: 1 }))).skipped).toBe(true)
        expect(await left()).toEqual(all)
        await session`select pg_advisory_unlock(hashtext('keygate:event-maintenance'))`
        session.release()
      } finally {
        await other.end()
      }
    }
    const report = await maintainEvents(await testEventsDatabase(), options({ batchRows: 1 }))
    expect(report.failed).toEqual([])
    expect(report.pruned).toBeGreaterThanOrEqual(6)
    expect(await left()).toEqual(['days 399', 'hours 34', 'ips 34', 'minutes 1', 'origins 34', 'others 34'])
  })

  test("each step fails alone and is named: a service database that fails leaves the event store's steps done", async () => {
    const database = await testEventsDatabase()
    const failure = new Error('the service database is away')
    // Every query on it fails, whatever is asked.
    const failing = new Proxy({} as Db, {
      get: () => () => {
        throw failure
      },
    })
    const told: [string, unknown][] = []
    const report = await maintainEvents(database, options({ serviceDb: failing, onError: (step, error) => void told.push([step, error]) }))
    expect(report.skipped).toBe(false)
    expect(report.failed).toEqual(['expired-rows', 'pruning'])
    expect(told).toEqual([
      ['expired-rows', failure],
      ['pruning', failure],
    ])
  })

  test('a step whose table is gone fails under its own name; the others run', async () => {
    const { db } = await testEventsDatabase()
    const told: string[] = []
    await db.execute(sql`alter table analytics_untimed_ids rename to analytics_untimed_ids_away`)
    try {
      const report = await maintainEvents(await testEventsDatabase(), options({ onError: (step) => void told.push(step) }))
      expect(report.failed).toEqual(['untimed'])
      expect(told).toEqual(['untimed'])
      // With nobody to tell, the step still fails alone.
      expect((await maintainEvents(await testEventsDatabase(), options())).failed).toEqual(['untimed'])
    } finally {
      await db.execute(sql`alter table analytics_untimed_ids_away rename to analytics_untimed_ids`)
    }
    await db.execute(sql`alter table analytics_events rename to analytics_events_away`)
    try {
      const report = await maintainEvents(await testEventsDatabase(), options({ onError: (step) => void told.push(step) }))
      expect(report.failed).toEqual(expect.arrayContaining(['partitions', 'drop']))
      expect(report.failed).not.toContain('untimed')
      expect(report.failed).not.toContain('pruning')
    } finally {
      await db.execute(sql`alter table analytics_events_away rename to analytics_events`)
    }
  })

  test('a run that cannot open its session reports the first step failed; the session gets the default limits', async () => {
    const database = await testEventsDatabase()
    const failure = new Error('no connection')
    const told: [string, unknown][] = []
    const closed = { ...database, tryExclusively: async () => Promise.reject(failure) } as typeof database
    expect(await maintainEvents(closed, options({ onError: (step, error) => void told.push([step, error]) }))).toEqual({
      skipped: false,
      created: [],
      dropped: [],
      deleted: 0,
      forgotten: 0,
      pruned: 0,
      failed: ['partitions'],
    })
    expect(told).toEqual([['partitions', failure]])
    // Without onError it still answers.
    expect((await maintainEvents(closed, options())).failed).toEqual(['partitions'])

    const limits: unknown[] = []
    const recorded = {
      ...database,
      tryExclusively: ((lock, task, given) => {
        limits.push(given)
        return database.tryExclusively(lock, task, given)
      }) as typeof database.tryExclusively,
    } as typeof database
    await maintainEvents(recorded, options())
    expect(limits).toEqual([{ statementTimeoutMs: 30_000, lockTimeoutMs: 2_000 }])
  })

  test("on the app's scheduler: hourly by default, one instance at a time, on the event store's database", async () => {
    const database = await testEventsDatabase()
    const scheduled: { name: string; everyMs: number; job: Job; options: JobOptions | undefined }[] = []
    const scheduler: Scheduler = {
      schedule: (name, everyMs, job, jobOptions) => {
        scheduled.push({ name, everyMs, job, options: jobOptions })
        return { runNow: async () => {} } as unknown as ReturnType<Scheduler['schedule']>
      },
      stop: async () => {},
    }
    scheduleEventMaintenance(scheduler, database, options())
    scheduleEventMaintenance(scheduler, database, options({ intervalMs: 60_000 }))
    expect(scheduled.map(({ name, everyMs, options: o }) => [name, everyMs, o])).toEqual([
      ['event-maintenance', 3_600_000, { exclusive: true, database }],
      ['event-maintenance', 60_000, { exclusive: true, database }],
    ])
    // The job is a maintenance run on the session it is given: the month after the day after
    // tomorrow's, dropped by hand, comes back.
    const soon = monthStart(Date.now() + 2 * DAY)
    const ahead = partitionName(new Date(Date.UTC(soon.getUTCFullYear(), soon.getUTCMonth() + 1, 1)))
    await database.db.execute(sql.raw(`drop table ${ahead}`))
    await scheduled[0]!.job({ db: database.db } as Parameters<Job>[0])
    expect(await partitionNames()).toContain(ahead)
  })

  test('by default a pause of at least 20 ms follows each full delete statement', async () => {
    const shop = await business('Default pause shop', 1)
    const writer = eventWriter((await testEventsDatabase()).db)
    await writer(Array.from({ length: 5 }, (_, i) => row(shop.id, shop.keyId, Date.now() - 3 * DAY - i * 1000)))
    const pauses: number[] = []
    const report = await maintainEvents(
      await testEventsDatabase(),
      options({ pauseMs: undefined, batchRows: 2, sleep: async (ms) => void pauses.push(ms) }),
    )
    expect(report.deleted).toBeGreaterThanOrEqual(5)
    expect(pauses.length).toBeGreaterThanOrEqual(2)
    for (const pause of pauses) expect(pause).toBeGreaterThanOrEqual(20)
    expect(await storedTimes(shop.id)).toEqual([])
  })

  test('one instance at a time: a run while another holds the maintenance runs nothing', async () => {
    const database = await testEventsDatabase()
    if (database.engine === 'postgres') {
      const other = postgres((await eventsDatabaseUrl())!, { max: 1, onnotice: () => {} })
      try {
        const session = await other.reserve()
        await session`select pg_advisory_lock(hashtext('keygate:event-maintenance'))`
        expect((await maintainEvents(database, options())).skipped).toBe(true)
        await session`select pg_advisory_unlock(hashtext('keygate:event-maintenance'))`
        session.release()
        expect((await maintainEvents(database, options())).skipped).toBe(false)
      } finally {
        await other.end()
      }
    } else {
      const both = await Promise.all([maintainEvents(database, options()), maintainEvents(database, options())])
      expect(both.map((r) => r.skipped).sort()).toEqual([false, true])
    }
  })

  test('maintenance while events flood in over HTTP: no 5xx, no event lost, and the expired ones go', async () => {
    const database = await testEventsDatabase()
    const flood = await business('Flood')
    const short = await business('Short', 30)
    const now = Date.now()
    // Work for every step: 3,000 rows past a business's retention, an expired partition with rows.
    await database.db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
      select gen_random_uuid(), ${short.id}::uuid, ${short.keyId}::uuid, 'page_view',
             now() - interval '31 days' - g * interval '1 minute', now() - interval '31 days'
      from generate_series(1, 3000) g`)
    const expired = monthStart(now - 460 * DAY)
    const expiredName = partitionName(expired)
    await database.db.execute(sql`drop table if exists ${sql.identifier(expiredName)}`)
    await database.db.execute(
      sql`create table ${sql.identifier(expiredName)} partition of analytics_events for values from (${sql.raw(`'${expired.toISOString()}'`)}) to (${sql.raw(`'${new Date(Date.UTC(expired.getUTCFullYear(), expired.getUTCMonth() + 1, 1)).toISOString()}'`)})`,
    )
    await database.db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
      select gen_random_uuid(), ${short.id}::uuid, ${short.keyId}::uuid, 'page_view', ${expired.toISOString()}::timestamptz + g * interval '1 minute', now()
      from generate_series(1, 200) g`)

    const { first, second } = await duringFlood(flood, async () => {
      // Two runs during the flood: the first does the work, the second finds little left.
      const first = await maintainEvents(database, options({ batchRows: 500, pauseMs: 5 }))
      const second = await maintainEvents(database, options({ batchRows: 500, pauseMs: 5, now: () => Date.now() + 40 * DAY }))
      return { first, second }
    })
    expect(first.failed).toEqual([])
    expect(second.failed).toEqual([])
    expect(first.dropped).toContain(expiredName)
    expect(first.deleted).toBe(3000)
    const left = await queryRows<{ n: number }>(
      database.db,
      sql`select count(*)::int as n from analytics_events where business_id = ${short.id}`,
    )
    expect(left[0]!.n).toBe(0)
  }, 60_000)
})
