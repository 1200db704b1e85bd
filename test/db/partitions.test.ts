import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { queryRows, sql } from '../../db/client.ts'
import { createPartitionsAhead, dropExpiredPartitions, partitionName } from '../../src/events/partitions.ts'
import { testDatabaseUrl, testEventsDatabase, testEventsDatabaseUrl } from '../support/database.ts'

// The partition rule of src/events/partitions.ts (docs/decisions.md, "Event partitions"),
// called directly on a clock in 2001: far from the months the other tests' events need
// (test/support/database.ts keeps those), so every table made or dropped here is one of
// these tests' own.
const utc = (year: number, month: number, day = 1, hour = 0) => Date.UTC(year, month - 1, day, hour)
const name = (year: number, month: number) => partitionName(new Date(utc(year, month)))

/**
 * Removes every table these tests make, before each test and after: `bun test --bail` (the
 * mutation runs, tools/mutation.ts) may stop before an afterEach, and a later run on the same
 * PostgreSQL database must not meet what a failed one left, a pending detach included.
 */
async function removeOwnTables(): Promise<void> {
  const { db, engine } = await testEventsDatabase()
  if (engine === 'postgres') {
    const pending = await queryRows<{ name: string }>(
      db,
      sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhdetachpending and c.relname ~ '^analytics_events_2001_'`,
    )
    for (const row of pending) await db.execute(sql`alter table analytics_events detach partition ${sql.identifier(row.name)} finalize`)
  }
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select relname as name from pg_class where relkind = 'r' and relnamespace = current_schema()::regnamespace
        and (relname ~ '^analytics_events_2001_' or relname in ('analytics_events_copy', 'archive_analytics_events_2000_12'))`,
  )
  for (const row of rows) await db.execute(sql`drop table ${sql.identifier(row.name)}`)
}
beforeEach(removeOwnTables)
afterEach(removeOwnTables)

/** The 2001 partitions attached to analytics_events, each with its range as epoch milliseconds. */
async function attached2001(): Promise<{ name: string; from: number; to: number }[]> {
  const { db } = await testEventsDatabase()
  return queryRows(
    db,
    sql`select c.relname as name,
          (extract(epoch from b[1]::timestamptz) * 1000)::float8 as "from",
          (extract(epoch from b[2]::timestamptz) * 1000)::float8 as "to"
        from pg_inherits i join pg_class c on c.oid = i.inhrelid,
          lateral regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM [(]''([^'']+)''[)] TO [(]''([^'']+)''[)]') b
        where i.inhparent = 'analytics_events'::regclass and c.relname ~ '^analytics_events_2001_'
        order by c.relname`,
  )
}

/** Tables of the schema (attached or not) among `names`. */
async function tablesAmong(names: string[]): Promise<string[]> {
  const { db } = await testEventsDatabase()
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select relname as name from pg_class where relkind = 'r' and relnamespace = current_schema()::regnamespace`,
  )
  return rows
    .map((row) => row.name)
    .filter((n) => names.includes(n))
    .sort()
}

describe('event partitions', () => {
  test('a month is named analytics_events_YYYY_MM, its month two digits', () => {
    expect(name(2001, 3)).toBe('analytics_events_2001_03')
    expect(name(2001, 12)).toBe('analytics_events_2001_12')
    expect(partitionName(new Date(utc(2001, 10, 31, 23)))).toBe('analytics_events_2001_10')
  })

  test('made ahead: every month from the oldest kept to the month after tomorrow, each holding its calendar month (UTC), named in order', async () => {
    const { db } = await testEventsDatabase()
    // Noon on 31 March: the oldest kept instant (59 days back) is in January, tomorrow is in April.
    const now = utc(2001, 3, 31, 12)
    const created = await createPartitionsAhead(db, now, 59)
    const months = [1, 2, 3, 4, 5].map((m) => name(2001, m))
    expect(created).toEqual(months)
    expect(await attached2001()).toEqual([1, 2, 3, 4, 5].map((m) => ({ name: name(2001, m), from: utc(2001, m), to: utc(2001, m + 1) })))
    // A second run finds them all.
    expect(await createPartitionsAhead(db, now, 59)).toEqual([])
    expect(await attached2001()).toHaveLength(5)
  })

  test('made ahead: a retention starting on the first of a month makes no partition before it, and the bounds are inclusive', async () => {
    const { db } = await testEventsDatabase()
    // 28 days before 1 March 2001 is 1 February 00:00; the day after is 2 March: March, then April.
    expect(await createPartitionsAhead(db, utc(2001, 3, 1), 28)).toEqual([name(2001, 2), name(2001, 3), name(2001, 4)])
    // One millisecond later the oldest kept instant is still in February.
    expect(await createPartitionsAhead(db, utc(2001, 3, 1) + 1, 28)).toEqual([])
    // One millisecond earlier it is in January.
    expect(await createPartitionsAhead(db, utc(2001, 3, 1) - 1, 28)).toEqual([name(2001, 1)])
  })

  test('dropped: months whose end is at or before now minus the retention, attached or left detached by an earlier run; others stay', async () => {
    const database = await testEventsDatabase()
    const { db } = database
    expect(await createPartitionsAhead(db, utc(2001, 3, 15), 60)).toEqual([name(2001, 1), name(2001, 2), name(2001, 3), name(2001, 4)])
    // A run that failed between its DETACH and its DROP left January a table of its own.
    await db.execute(sql`alter table analytics_events detach partition ${sql.identifier(name(2001, 1))}`)
    // Tables of the same prefix that are no month of the rule are not the maintenance's to drop.
    await db.execute(sql`create table analytics_events_copy (like analytics_events)`)
    await db.execute(sql`create table analytics_events_2001_01_copy (like analytics_events)`)
    // Nor is a partition an operator attached under a name of their own, however old.
    await db.execute(sql`create table archive_analytics_events_2000_12 (like analytics_events including defaults)`)
    await db.execute(
      sql`alter table analytics_events attach partition archive_analytics_events_2000_12 for values from ('2000-12-01T00:00:00Z') to ('2001-01-01T00:00:00Z')`,
    )
    const all = [
      name(2001, 1),
      name(2001, 2),
      name(2001, 3),
      name(2001, 4),
      'analytics_events_2001_01_copy',
      'analytics_events_copy',
      'archive_analytics_events_2000_12',
    ]

    // Now minus 31 days is 1 March 00:00: February ends then, and goes; March does not.
    const dropped = await dropExpiredPartitions(db, database.engine, utc(2001, 4, 1), 31)
    expect(dropped).toEqual([name(2001, 1), name(2001, 2)])
    expect(await tablesAmong(all)).toEqual([
      'analytics_events_2001_01_copy',
      name(2001, 3),
      name(2001, 4),
      'analytics_events_copy',
      'archive_analytics_events_2000_12',
    ])
    expect((await attached2001()).map((p) => p.name)).toEqual([name(2001, 3), name(2001, 4)])

    // One millisecond before March ends, March stays; at its end it goes.
    expect(await dropExpiredPartitions(db, database.engine, utc(2001, 4, 1) - 1, 0)).toEqual([])
    expect(await dropExpiredPartitions(db, database.engine, utc(2001, 4, 1), 0)).toEqual([name(2001, 3)])
    expect(await tablesAmong(all)).toEqual([
      'analytics_events_2001_01_copy',
      name(2001, 4),
      'analytics_events_copy',
      'archive_analytics_events_2000_12',
    ])
  })

  test('dropped on PostgreSQL: a detach a failed run left pending is finished, then the month dropped', async () => {
    const database = await testEventsDatabase()
    if (database.engine !== 'postgres') return
    const { db } = database
    await createPartitionsAhead(db, utc(2001, 3, 15), 60)
    // A DETACH CONCURRENTLY cancelled in its second transaction (it waits for a reader that
    // started before it) leaves the partition pending detach.
    const other = postgres(((await testEventsDatabaseUrl()) ?? (await testDatabaseUrl()))!, { max: 2, onnotice: () => {} })
    try {
      const reader = await other.reserve()
      const detacher = await other.reserve()
      await reader`begin`
      await reader`select count(*) from analytics_events`
      await detacher`set statement_timeout = 300`
      const failed = await detacher
        .unsafe(`alter table analytics_events detach partition ${name(2001, 1)} concurrently`)
        .then(() => 'detached')
        .catch((error: Error) => error.message)
      expect(failed).toContain('statement timeout')
      await reader`commit`
      reader.release()
      detacher.release()
    } finally {
      await other.end()
    }
    const pending = await queryRows<{ name: string }>(
      db,
      sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhdetachpending order by 1`,
    )
    expect(pending.map((row) => row.name)).toEqual([name(2001, 1)])

    // Now minus 31 days is 1 March: January (its detach finished first) and February go.
    expect(await dropExpiredPartitions(db, 'postgres', utc(2001, 4, 1), 31)).toEqual([name(2001, 1), name(2001, 2)])
    expect((await attached2001()).map((p) => p.name)).toEqual([name(2001, 3), name(2001, 4)])
    expect(await tablesAmong([name(2001, 1), name(2001, 2), name(2001, 3), name(2001, 4)])).toEqual([name(2001, 3), name(2001, 4)])
  })

  test('dropped on PostgreSQL: an attached month is detached CONCURRENTLY first, so reads never queue behind the drop', async () => {
    const database = await testEventsDatabase()
    if (database.engine !== 'postgres') return
    const { db } = database
    await createPartitionsAhead(db, utc(2001, 3, 15), 60)
    // And a month an earlier run left detached: it is dropped, with no DETACH.
    await db.execute(sql`alter table analytics_events detach partition ${sql.identifier(name(2001, 2))}`)
    const other = postgres(((await testEventsDatabaseUrl()) ?? (await testDatabaseUrl()))!, { max: 3, onnotice: () => {} })
    let dropping: Promise<string[]> | undefined
    try {
      // A reader in a transaction that began before the maintenance: the detach waits for it.
      const reader = await other.reserve()
      await reader`begin`
      await reader`select count(*) from analytics_events`
      dropping = dropExpiredPartitions(db, 'postgres', utc(2001, 4, 1), 31)
      const waitingFor = async () =>
        (
          await other<{ query: string }[]>`select query from pg_stat_activity
            where wait_event_type = 'Lock' and query like ${`%${name(2001, 1)}%`}`
        ).map((row) => row.query)
      let waiting: string[] = []
      while (waiting.length === 0) {
        await Bun.sleep(20)
        waiting = await waitingFor()
      }
      expect(waiting).toEqual([expect.stringContaining('concurrently')])
      // Meanwhile another session reads analytics_events without queueing: a plain DROP
      // would hold its lock request on analytics_events in the way of every read and insert.
      const client = await other.reserve()
      await client`set lock_timeout = 1000`
      expect([...(await client<{ n: number }[]>`select count(*)::int as n from analytics_events`)]).toEqual([{ n: 0 }])
      client.release()
      await reader`commit`
      reader.release()
      expect(await dropping).toEqual([name(2001, 1), name(2001, 2)])
    } finally {
      // On a failure the reader's session ends here, and the drop it held finishes before the cleanup.
      await other.end()
      await dropping?.catch(() => [])
    }
    expect((await attached2001()).map((p) => p.name)).toEqual([name(2001, 3), name(2001, 4)])
    expect(await tablesAmong([name(2001, 1), name(2001, 2)])).toEqual([])
  })
})
