import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { analyticsEvents } from '../../../db/schema/index.ts'
import { before, positionCursor, toPage, type Page, type Position } from '../shared/paging.ts'

/** One event as the writer stores it; times are ISO strings, ready for JSON. */
export interface EventRow {
  /** UUIDv7, made by the service: time-ordered, so events of one millisecond list in arrival order. */
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
}

/**
 * The batch insert, prepared once per database handle: one multi-row statement whose rows
 * travel as a single JSON parameter expanded by json_to_recordset (one bind value instead
 * of eleven per row, no limit on bind parameters, the same statement on postgres.js and
 * PGlite). Prepared, it costs one round trip and no parse or plan per batch; json (not
 * jsonb) skips building a binary copy of the whole batch. bench/README.md has the figures.
 */
export function eventInserter(db: Db): (rows: readonly EventRow[]) => Promise<void> {
  // One statement, not a transaction: BEGIN and COMMIT round trips cost 30% of ingest
  // throughput (bench/README.md). The price: a batch whose requests were told 503 because
  // the database hung past the deadline may still commit when it answers again
  // (docs/decisions.md, "Database faults").
  // The select lists every column in the table's order: Drizzle names them all.
  const statement = db
    .insert(analyticsEvents)
    .select(
      sql`select id, business_id, key_id, origin, event_type, url, referrer, anonymous_id, person_id,
             coalesce(properties, '{}'::jsonb), occurred_at, received_at
          from json_to_recordset(${sql.placeholder('rows')}::json) as e(
            id uuid, business_id uuid, key_id uuid, origin text, event_type text, url text, referrer text,
            anonymous_id text, person_id text, properties jsonb, occurred_at timestamptz, received_at timestamptz)`,
    )
    .prepare('insert_analytics_events')
  return async (rows) => {
    await statement.execute({ rows: JSON.stringify(rows) })
  }
}

export interface EventFilter {
  type?: string
  from?: Date
  to?: Date
  after: Position | null
  limit: number
}

export type StoredEventRow = typeof analyticsEvents.$inferSelect

/** A page of a business's events, newest first by (occurredAt, id). */
export async function listEvents(db: Db, businessId: string, filter: EventFilter): Promise<Page<ReturnType<typeof toEventRecord>>> {
  const e = analyticsEvents
  const rows = await db
    .select()
    .from(e)
    .where(
      and(
        eq(e.businessId, businessId),
        filter.type === undefined ? undefined : eq(e.eventType, filter.type),
        filter.from === undefined ? undefined : gte(e.occurredAt, filter.from),
        filter.to === undefined ? undefined : lt(e.occurredAt, filter.to),
        before(e.occurredAt, e.id, filter.after),
      ),
    )
    .orderBy(desc(e.occurredAt), desc(e.id))
    .limit(filter.limit + 1)
  return toPage(rows, filter.limit, (row) => positionCursor(row.occurredAt, row.id), toEventRecord)
}

export function toEventRecord(row: StoredEventRow) {
  return {
    id: row.id,
    eventType: row.eventType,
    url: row.url,
    referrer: row.referrer,
    anonymousId: row.anonymousId,
    personId: row.personId,
    properties: row.properties,
    timestamp: row.occurredAt.toISOString(),
    receivedAt: row.receivedAt.toISOString(),
    keyId: row.keyId,
    origin: row.origin,
  }
}
