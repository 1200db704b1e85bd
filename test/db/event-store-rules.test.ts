import { afterAll, describe, expect, test } from 'bun:test'
import { getTableName, is, sql } from 'drizzle-orm'
import { PgTable } from 'drizzle-orm/pg-core'
import * as serviceSchema from '../../db/schema/service.ts'
import { openDatabase, queryRows, type Database } from '../../db/client.ts'
import { migrate } from '../../db/migrate.ts'
import { createApp, type Service } from '../../src/app.ts'
import { maintainEvents } from '../../src/events/maintenance.ts'
import { listArrivedEvents, listEvents } from '../../src/events/read.ts'
import { silentLogger } from '../../src/observability/log.ts'
import { testDatabase, testDatabaseUrl, testEventsDatabase, testEventsDatabaseUrl } from '../support/database.ts'
import { ADMIN_TOKEN, admin, call, seedKey } from '../support/service.ts'

// The rules a sharded PostgreSQL (Citus, distributed by business_id) needs of the event
// store (docs/scaling.md, "The rules the event store keeps"): every primary key and unique
// index holds business_id, no foreign key leaves the store or enters it, and every statement
// the service sends it names one business.

/** The event store's tables: events, their id claims, erasure requests. */
const EVENT_STORE_TABLES = ['analytics_events', 'analytics_untimed_ids', 'analytics_erasures'] as const

/** The tables, as SQL: `in (...)` of their names. */
const TABLES_SQL = sql.raw(`(${EVENT_STORE_TABLES.map((name) => `'${name}'`).join(', ')})`)
/** A table of the service's own database (db/schema/service.ts), which the event store's does not hold apart. */
const SERVICE_TABLE = new RegExp(
  `\\b"?(${Object.values(serviceSchema)
    .filter((table) => is(table, PgTable))
    .map((table) => getTableName(table))
    .join('|')})"?\\b`,
)
const TABLE = new RegExp(`\\b"?(${EVENT_STORE_TABLES.join('|')})"?\\b`)
/** Each insert into a table of the store, with its column list: its rows must carry business_id (a sharded store routes each row by it). */
const STORE_INSERT = new RegExp(`\\binsert into "?(${EVENT_STORE_TABLES.join('|')})"?\\s*(\\([^)]*\\))?`, 'gi')
/** Each place a statement reads or changes a table of the store (from, join, update, using). */
const STORE_READ = new RegExp(`\\b(from|join|update|using)\\s+"?(${EVENT_STORE_TABLES.join('|')})"?\\b`, 'gi')
/** A filter on a business: `business_id = …` or `business_id in (…)`, qualified or not. */
const BUSINESS_FILTER = /"?business_id"?\s*(=|in\s*\()/gi

/**
 * A statement that names one business: every row it inserts into the store carries its
 * business_id, and it has at least one business filter for each place it reads or changes
 * a table of the store (a filter in a subquery on erasures does not scope the events read
 * around it).
 */
function namesOneBusiness(text: string): boolean {
  const inserts = [...text.matchAll(STORE_INSERT)]
  if (inserts.some((insert) => !/business_id/.test(insert[2] ?? ''))) return false
  const reads = text.match(STORE_READ)?.length ?? 0
  if (reads === 0) return inserts.length > 0
  return (text.match(BUSINESS_FILTER)?.length ?? 0) >= reads
}

/**
 * Statements that touch the store without naming a business, and why each is still right
 * for a sharded store: each is run on every shard as it stands.
 */
const ACROSS_BUSINESSES: { pattern: RegExp; why: string }[] = [
  {
    pattern: /^(create|alter|drop) table|pg_inherits|to_regclass|detach partition|attach partition/i,
    why: 'partitions: DDL, run on every shard',
  },
  {
    pattern: /^with gone as \(\s*delete from "(analytics_untimed_ids|analytics_erasures)" where \(business_id, id\) in \(/,
    why: 'housekeeping by age (ids past a day, erasures finished 30 days ago): each row deleted by its primary key, which holds business_id: a multi-shard delete, right on every shard',
  },
  {
    pattern: /^select p\.business_id from analytics_erasures p where p\.status = 'pending'[\s\S]*group by p\.business_id[\s\S]*limit 1$/,
    why: "the erasure worker's choice of the business to serve next: one aggregate over the queue, grouped by business (each shard answers its candidates, the coordinator keeps the first); the claim that follows names it",
  },
  {
    pattern: /^select min\(greatest\("analytics_erasures"\."requested_at"/,
    why: "the erasure queue's next due time, one aggregate over the queue: every shard answers its own minimum",
  },
]

/** Which statements of `statements` touch the store with no business named, and no reason written above. */
function unscoped(statements: readonly string[]): string[] {
  return statements
    .filter((text) => TABLE.test(text))
    .filter((text) => !namesOneBusiness(text))
    .filter((text) => !ACROSS_BUSINESSES.some((rule) => rule.pattern.test(text.trim())))
}

describe('the event store keeps what a sharded store needs', () => {
  test('every primary key and unique index of the store holds business_id', async () => {
    const { db } = await testEventsDatabase()
    const keys = await queryRows<{ table: string; index: string; columns: string[] }>(
      db,
      sql`select c.relname as table, i.relname as index,
            array(select a.attname from unnest(x.indkey) k join pg_attribute a on a.attrelid = c.oid and a.attnum = k)::text[] as columns
          from pg_index x join pg_class c on c.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
          where x.indisunique and c.relname in ${TABLES_SQL}`,
    )
    expect(new Set(keys.map((k) => k.table))).toEqual(new Set(EVENT_STORE_TABLES))
    expect(keys.filter((k) => !k.columns.includes('business_id')).map((k) => k.index)).toEqual([])
  })

  test('no foreign key leaves the store, and none enters it', async () => {
    const { db } = await testDatabase()
    const foreign = await queryRows<{ name: string }>(
      db,
      sql`select con.conname as name from pg_constraint con
          join pg_class src on src.oid = con.conrelid join pg_class dst on dst.oid = con.confrelid
          where con.contype = 'f' and (src.relname in ${TABLES_SQL} or dst.relname in ${TABLES_SQL})`,
    )
    expect(foreign).toEqual([])
  })

  test('the check finds a statement without a business filter (it can fail)', () => {
    expect(unscoped(['select * from "analytics_events" where "event_type" = $1'])).toEqual([
      'select * from "analytics_events" where "event_type" = $1',
    ])
    expect(unscoped(['select * from "analytics_events" where "business_id" = $1'])).toEqual([])
    // A business filter in a subquery on erasures does not scope the events around it.
    const aroundErasures =
      'select * from "analytics_events" where "event_type" = $1 and not exists (select 1 from "analytics_erasures" where "analytics_erasures"."business_id" = $2)'
    expect(unscoped([aroundErasures])).toEqual([aroundErasures])
    expect(unscoped(['select 1 from "api_keys"'])).toEqual([])
  })
})

describe('every statement the service sends the store names one business', () => {
  const statements: string[] = []
  let database: Database
  /** The event store's, told every statement: `database` itself unless EVENTS_DATABASE_URL puts the events apart. */
  let events: Database
  let service: Service

  afterAll(async () => {
    await service?.drain()
    await database?.close()
    if (events !== database) await events?.close()
  })

  test("ingestion, the API's and the dashboard's reads, erasure, a retention change and the maintenance", async () => {
    // Databases of their own (on PostgreSQL, the worker's), the event store's told every statement.
    const record = { onStatement: (text: string) => statements.push(text) }
    const eventsUrl = await testEventsDatabaseUrl()
    database = await openDatabase({ databaseUrl: await testDatabaseUrl(), dataDir: 'memory://', ...(eventsUrl ? {} : record) })
    events = eventsUrl ? await openDatabase({ databaseUrl: eventsUrl, dataDir: 'memory://', ...record }) : database
    await migrate(database, events)
    service = createApp({
      database,
      eventsDatabase: events,
      adminToken: ADMIN_TOKEN,
      logger: silentLogger,
      erasure: { settleMs: 0, retryDelayMs: 50 },
    })
    statements.length = 0
    const business = (await (await admin(service, '/businesses', { method: 'POST', body: { name: 'Rules' } })).json()) as { id: string }
    const pk = await seedKey(service, business.id, { scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com'] })
    const sk = await seedKey(service, business.id, { type: 'private', scopes: ['ANALYTICS_READ', 'ANALYTICS_WRITE'] })
    const origin = 'https://example.com'
    const id = crypto.randomUUID()
    expect(
      (await call(service, '/api/v0/analytics', { key: pk.key, origin, body: { eventType: 'page_view', anonymousId: 'v1' } })).status,
    ).toBe(202)
    const batch = {
      events: [
        { id, eventType: 'signup', personId: 'p1' },
        { id, eventType: 'signup', personId: 'p1' },
        { eventType: 'order', personId: 'p1', timestamp: new Date().toISOString() },
      ],
    }
    expect((await call(service, '/api/v0/analytics', { key: sk.key, body: batch })).status).toBe(202)
    const page = await call(service, '/api/v0/analytics?type=signup&limit=1', { key: sk.key })
    expect(page.status).toBe(200)
    const cursor = ((await page.json()) as { nextCursor: string | null }).nextCursor
    if (cursor) expect((await call(service, `/api/v0/analytics?cursor=${cursor}`, { key: sk.key })).status).toBe(200)
    // The dashboard's reads: a page filtered by key, and the live view's newer events.
    const keptSince = await service.services.retention.readableSince(business.id)
    await listEvents(events.db, business.id, { keptSince, keyId: pk.record.id, after: null, limit: 50 })
    await listArrivedEvents(events.db, business.id, {
      keptSince,
      since: { at: new Date(0), id: '00000000-0000-0000-0000-000000000000' },
      limit: 50,
    })
    const erasure = await call(service, '/api/v0/analytics/erasures', { key: sk.key, body: { personId: 'p1' } })
    expect(erasure.status).toBe(202)
    await service.services.erasures.idle()
    expect((await admin(service, `/businesses/${business.id}`, { method: 'PATCH', body: { eventRetentionDays: 30 } })).status).toBe(200)
    await maintainEvents(events, { serviceDb: database.db, retentionDays: 400 })
    const touched = statements.filter((text) => TABLE.test(text))
    expect(touched.length).toBeGreaterThan(5)
    const found = unscoped(statements)
    if (found.length > 0) console.log(found.join('\n----\n'))
    expect(found).toEqual([])
    if (eventsUrl) {
      // Apart, the event store's database is asked about nothing else: no statement joins a service table.
      expect(statements.filter((text) => SERVICE_TABLE.test(text))).toEqual([])
    }
  })
})
