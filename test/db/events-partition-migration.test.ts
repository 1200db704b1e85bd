import { expect, test } from 'bun:test'
import { queryRows, sql } from '../../db/client.ts'
import { applyMigrations } from '../../db/migrate.ts'
import { migrateBefore, OWN_DATABASE_TEST_TIMEOUT, scratchDatabase } from '../support/scratch-database.ts'

// Issue 31 item 1: migration 0009 turns analytics_events into a table partitioned by month
// and keeps every row of a database written before it, however old. A database of its own
// (a fresh PGlite, or a scratch database on PostgreSQL named after DATABASE_URL's), migrated
// in two steps around the change.
const TAG = '0009_analytics_events_partitioned'

/** Every row's every column, in one text: equal before and after means no row was lost or changed. */
const everyRow = sql`select count(*)::int as rows, coalesce(md5(string_agg(e::text, '|' order by e.business_id, e.id)), '') as digest
  from (select id, business_id, key_id, origin, event_type, url, referrer, anonymous_id, person_id, properties, occurred_at, received_at
        from analytics_events) e`

test(
  'every event of a database written before partitions survives the migration, the oldest included',
  async () => {
    const { database, dispose } = await scratchDatabase('partitions')
    try {
      const { db } = database
      await migrateBefore(database, TAG)
      const [business] = await queryRows<{ id: string }>(db, sql`insert into businesses (name) values ('Acme') returning id`)
      const key = crypto.randomUUID()
      // 3,000 events spread over the last two years, a few from long before, and some from
      // the last hour stored at their receive time (sent without timestamp, perhaps).
      await db.execute(sql`insert into analytics_events (id, business_id, key_id, origin, event_type, url, anonymous_id, properties, occurred_at, received_at)
      select gen_random_uuid(), ${business!.id}::uuid, ${key}::uuid, case when g % 2 = 0 then 'https://example.com' end,
             case when g % 5 = 0 then 'signup' else 'page_view' end, 'https://example.com/p/' || g, md5(g::text),
             jsonb_build_object('n', g), now() - (g * interval '5 hours 13 minutes'), now()
      from generate_series(1, 3000) g`)
      await db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at) values
      (gen_random_uuid(), ${business!.id}, ${key}, 'ancient', '2000-01-01T00:00:00Z', '2000-01-01T00:00:01Z'),
      (gen_random_uuid(), ${business!.id}, ${key}, 'ancient', '2013-06-15T12:34:56.789Z', '2013-06-15T12:35:00Z'),
      (gen_random_uuid(), ${business!.id}, ${key}, 'future', now() + interval '23 hours', now())`)
      const untimed = crypto.randomUUID()
      await db.execute(sql`insert into analytics_events (id, business_id, key_id, event_type, occurred_at, received_at)
      values (${untimed}, ${business!.id}, ${key}, 'page_view', date_trunc('milliseconds', now() - interval '1 hour'), date_trunc('milliseconds', now() - interval '1 hour'))`)
      const [before] = await queryRows<{ rows: number; digest: string }>(db, everyRow)
      expect(before!.rows).toBe(3004)

      await applyMigrations(db)

      expect(await queryRows(db, everyRow)).toEqual([before])
      const [layout] = await queryRows<{ partitioned: boolean; partitions: number; oldest: string; key: string }>(
        db,
        sql`select c.relkind = 'p' as partitioned,
            (select count(*)::int from pg_inherits where inhparent = c.oid) as partitions,
            (select min(r.relname) from pg_inherits i join pg_class r on r.oid = i.inhrelid where i.inhparent = c.oid) as oldest,
            pg_get_constraintdef((select oid from pg_constraint where conname = 'analytics_events_pkey' and conrelid = c.oid)) as key
          from pg_class c where c.oid = 'analytics_events'::regclass`,
      )
      expect(layout!.partitioned).toBe(true)
      expect(layout!.oldest).toBe('analytics_events_2000_01')
      expect(layout!.key).toBe('PRIMARY KEY (business_id, occurred_at, id)')
      // Every month of the default retention has its partition, empty or not.
      expect(layout!.partitions).toBeGreaterThanOrEqual(14)
      // The recent event stored at its receive time is remembered as possibly untimed.
      const remembered = await queryRows<{ id: string }>(db, sql`select id from analytics_untimed_ids`)
      expect(remembered.map((row) => row.id)).toContain(untimed)
      const old = await queryRows(db, sql`select 1 from pg_class where relname = 'analytics_events_unpartitioned'`)
      expect(old).toEqual([])
    } finally {
      await dispose()
    }
  },
  OWN_DATABASE_TEST_TIMEOUT,
)
