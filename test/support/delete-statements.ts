import { queryRows, sql, type Db } from '../../db/client.ts'

/**
 * Records, for each DELETE statement on analytics_events, how many rows it removed: a
 * statement trigger with a transition table, so a test sees the batches as the database
 * ran them, whichever module issued them. The log is a plain table (not a temporary one):
 * on PostgreSQL the deletes may run on another pooled connection than the test's.
 */
export async function watchEventDeletes(db: Db) {
  await db.execute(sql`create table if not exists test_event_deletes (seq serial primary key, n int not null)`)
  await db.execute(sql`truncate test_event_deletes`)
  await db.execute(sql`create or replace function test_count_event_deletes() returns trigger language plpgsql as $$
    begin
      insert into test_event_deletes (n) select count(*) from gone;
      return null;
    end $$`)
  await db.execute(sql`drop trigger if exists test_count_event_deletes on analytics_events`)
  await db.execute(sql`create trigger test_count_event_deletes after delete on analytics_events
    referencing old table as gone for each statement execute function test_count_event_deletes()`)
  return {
    /** Rows removed by each statement that removed any, in order. */
    async rowsPerStatement(): Promise<number[]> {
      const rows = await queryRows<{ n: number }>(db, sql`select n from test_event_deletes where n > 0 order by seq`)
      return rows.map((row) => row.n)
    },
    async stop(): Promise<void> {
      await db.execute(sql`drop trigger if exists test_count_event_deletes on analytics_events`)
      await db.execute(sql`drop function if exists test_count_event_deletes()`)
      await db.execute(sql`drop table if exists test_event_deletes`)
    },
  }
}
