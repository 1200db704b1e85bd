import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { analyticsEvents } from '../../db/schema/index.ts'
import { isDatabaseUnavailable } from '../../db/faults.ts'
import { DEADLOCK_DETECTED, sqlState } from '../shared/validation.ts'

/** One event as the writer stores it; times are ISO strings, ready for JSON. */
export interface EventRow {
  /**
   * The sender's `id`, else a UUIDv7 made by the service: time-ordered, so events of one
   * millisecond list in arrival order.
   */
  id: string
  business_id: string
  key_id: string
  origin: string | null
  event_type: string
  url: string | null
  referrer: string | null
  anonymous_id: string | null
  person_id: string | null
  properties: Record<string, unknown>
  occurred_at: string
  received_at: string
  /**
   * Sent with an `id` and no `timestamp`: stored at its receive time, which a retry does not
   * repeat, so it is stored only when analytics_untimed_ids does not know its id yet.
   */
  untimed: boolean
}

/**
 * The batch insert, prepared once per database handle: one multi-row statement whose rows
 * travel as a single JSON parameter (see insertParameter) expanded by jsonb_to_recordset
 * (one bind value instead of eleven per row, no limit on bind parameters, the same
 * statement on postgres.js and PGlite). Prepared, it costs one round trip and no parse or
 * plan per batch. jsonb rather than json: json_to_recordset builds a hash table per event,
 * and past about 100 rows a statement the backend's memory went back to the system and
 * was faulted in again each time, doubling its CPU per row (bench/README.md, "The insert's
 * form").
 */
export function eventInserter(db: Db): (rows: readonly EventRow[]) => Promise<void> {
  // One statement, not a transaction: BEGIN and COMMIT round trips cost 30% of ingest
  // throughput (bench/README.md). The price: a batch whose requests were told 503 because
  // the database hung past the deadline may still commit when it answers again
  // (docs/decisions.md, "Database faults").
  const input = db.$with('input', {}).as(
    sql`select e.id, g.business, g.key, g.origin, e.type, e.url, e.referrer, e.anonymous, e.person,
           coalesce(e.properties, '{}'::jsonb) as properties,
           coalesce(e.occurred, e.received, g.received)::timestamp (3) with time zone as occurred,
           coalesce(e.received, g.received) as received, coalesce(e.untimed, false) as untimed
        from jsonb_to_recordset(${sql.placeholder('groups')}::jsonb)
          as g(business uuid, key uuid, origin text, received timestamptz, events jsonb)
        cross join lateral jsonb_to_recordset(g.events)
          as e(id uuid, type text, url text, referrer text, anonymous text, person text, properties jsonb,
               received timestamptz, occurred timestamptz, untimed boolean)`,
  )
  // An event sent with an id and no timestamp claims its id for 24 hours; one whose id is
  // claimed already (a retry, a duplicate in this batch, or a concurrent insert's: it waits
  // for that one) is left out. The claim and the event commit together, in this statement.
  const claimed = db.$with('claimed', {}).as(
    sql`insert into analytics_untimed_ids (business_id, id, occurred_at)
        select business, id, occurred from input where untimed
        on conflict (business_id, id) do nothing
        returning business_id, id, occurred_at`,
  )
  // The select lists every column in the table's order: Drizzle names them all.
  const statement = db
    .with(input, claimed)
    .insert(analyticsEvents)
    .select(
      // A left join, not `exists`: PostgreSQL 15 planned the latter as a hashed subplan
      // sized by its guess of the CTE's rows, and a one-event insert took 300-450 ms.
      sql`select i.id, i.business, i.key, i.origin, i.type, i.url, i.referrer, i.anonymous, i.person, i.properties, i.occurred, i.received
          from input i
          left join claimed c on c.business_id = i.business and c.id = i.id and c.occurred_at = i.occurred
          where not i.untimed or c.id is not null`,
    )
    // An event already stored with this id and time (a retry, a duplicate in this batch, or
    // one a concurrent insert is writing: it waits for that one) is skipped, not an error.
    .onConflictDoNothing({ target: [analyticsEvents.businessId, analyticsEvents.occurredAt, analyticsEvents.id] })
    .prepare('insert_analytics_events')
  return async (rows) => {
    const groups = insertParameter(rows)
    try {
      await statement.execute({ groups })
    } catch (error) {
      // Two inserts in flight that hold the same sender ids in opposite orders (retries of
      // two requests grouped differently) wait on each other; PostgreSQL ends one. Run
      // again, it finds the other's rows committed and skips them.
      if (sqlState(error) !== DEADLOCK_DETECTED) throw error
      await statement.execute({ groups })
    }
  }
}

/** `COPY ... FROM STDIN` on PostgreSQL (db/client.ts `copyIn`), within the statement deadline. */
export type CopyIn = (statement: string, text: string) => Promise<void>

/**
 * Batches this large or larger go by COPY where the database offers it; smaller ones
 * (single events arriving together) by the prepared insert, one round trip against two
 * plus a transaction (docs/decisions.md, "Analytics").
 */
export const COPY_MIN_ROWS = 64

export const COPY_EVENTS =
  'copy analytics_events (id, business_id, key_id, origin, event_type, url, referrer, anonymous_id, person_id, properties, occurred_at, received_at) from stdin'

/**
 * How the group commit stores a batch. On PostgreSQL, a batch of `COPY_MIN_ROWS` or more
 * goes by `COPY ... FROM STDIN`: the server inserts the rows in pages rather than one by
 * one, and parses no JSON (bench/README.md: about a third less database CPU a row than
 * the jsonb insert). COPY cannot skip an event already stored, so such a batch fails whole
 * (a retry of stored events, a duplicate within the batch, one a concurrent COPY wrote,
 * or two COPYs waiting on each other's ids) and is then written by the insert, which
 * skips stored ids: the primary key enforces "stored once" either way. The COPY's own
 * error is not known (db/deadline.ts `boundedCopy`), so any failure but an unavailable
 * database goes to the insert, which reports its own. Smaller batches, and PGlite, use
 * the insert alone.
 */
export function eventWriter(db: Db, copyIn?: CopyIn): (rows: readonly EventRow[]) => Promise<void> {
  const insert = eventInserter(db)
  if (copyIn === undefined) return insert
  return async (rows) => {
    // COPY cannot consult analytics_untimed_ids: a batch with an untimed event goes by insert.
    if (rows.length < COPY_MIN_ROWS || rows.some((row) => row.untimed)) return insert(rows)
    try {
      await copyIn(COPY_EVENTS, copyText(rows))
    } catch (error) {
      // A database that does not answer fails the batch; the insert would fare no better.
      if (isDatabaseUnavailable(error)) throw error
      await insert(rows)
    }
  }
}

/**
 * The rows in COPY's text format, in COPY_EVENTS' column order: fields split by tabs,
 * rows ended by newlines, null as `\N`, and backslash, tab, newline and carriage return
 * escaped with a backslash. (No NUL can occur: the body screen refused it.)
 */
export function copyText(rows: readonly EventRow[]): string {
  let text = ''
  for (const row of rows) {
    const properties = isEmpty(row.properties) ? '{}' : copyField(JSON.stringify(row.properties))
    text += `${row.id}\t${row.business_id}\t${row.key_id}\t${copyNullable(row.origin)}\t${copyField(row.event_type)}\t${copyNullable(row.url)}\t${copyNullable(row.referrer)}\t${copyNullable(row.anonymous_id)}\t${copyNullable(row.person_id)}\t${properties}\t${row.occurred_at}\t${row.received_at}\n`
  }
  return text
}

const COPY_SPECIAL = /[\\\t\n\r]/
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }

function copyField(value: string): string {
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : value
}

function copyNullable(value: string | null): string {
  return value === null ? '\\N' : copyField(value)
}

/** A run of consecutive rows of one business, key and Origin, as the insert reads it. */
interface InsertGroup {
  business: string
  key: string
  origin: string | null
  received: string
  events: InsertEvent[]
}

/** One event's own fields; a field left out is null, or the group's, or its receive time. */
interface InsertEvent {
  id: string
  type: string
  url?: string
  referrer?: string
  anonymous?: string
  person?: string
  properties?: Record<string, unknown>
  /** Only when it differs from the group's. */
  received?: string
  /** Only when it differs from the event's receive time. */
  occurred?: string
  /** Only when true (EventRow's `untimed`). */
  untimed?: true
}

/**
 * The insert's parameter: consecutive rows of one business, key and Origin (a request's
 * events, and often several requests' from one site) form a group that carries those and
 * the receive time once, and each event carries only what is its own. Against one object
 * of twelve fields per row, a 50-event request's rows are 60% fewer bytes to serialize,
 * send and parse, and PostgreSQL converts two uuids and two times fewer per row. Measured:
 * a quarter less client CPU a row, the same database CPU as plain jsonb (bench/README.md).
 */
export function insertParameter(rows: readonly EventRow[]): string {
  const groups: InsertGroup[] = []
  let group: InsertGroup | undefined
  for (const row of rows) {
    if (group === undefined || row.business_id !== group.business || row.key_id !== group.key || row.origin !== group.origin) {
      group = { business: row.business_id, key: row.key_id, origin: row.origin, received: row.received_at, events: [] }
      groups.push(group)
    }
    // JSON.stringify leaves out undefined fields: the database reads them as null.
    group.events.push({
      id: row.id,
      type: row.event_type,
      url: row.url ?? undefined,
      referrer: row.referrer ?? undefined,
      anonymous: row.anonymous_id ?? undefined,
      person: row.person_id ?? undefined,
      properties: isEmpty(row.properties) ? undefined : row.properties,
      received: row.received_at === group.received ? undefined : row.received_at,
      occurred: row.occurred_at === row.received_at ? undefined : row.occurred_at,
      untimed: row.untimed ? true : undefined,
    })
  }
  return JSON.stringify(groups)
}

function isEmpty(properties: Record<string, unknown>): boolean {
  for (const _ in properties) return false
  return true
}
