import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { analyticsErasures, analyticsEvents } from '../../db/schema/index.ts'
import { before, positionCursor, toPage, type Page, type Position } from '../shared/paging.ts'

// Reading a business's tracked events: the one query behind `GET /api/v0/analytics`
// (src/areas/analytics) and the dashboard's events page (src/dashboard/events.ts). It stands
// below both (docs/architecture.md, "The tree"), so that whatever limits what may be read
// (retention, erasure) is written once and holds for both. Every query takes the business
// first: no event of another business is ever read.

/** What an event type may be: 1-64 characters of [A-Za-z0-9_.:-]. */
export const EVENT_TYPE_PATTERN = '^[A-Za-z0-9_.:-]{1,64}$'

/** Which events of the business a list holds, and the page: `after` a cursor's position, `limit` rows. */
export interface EventFilter {
  /**
   * The business's retention bound: no read answers an event dated before it. Read from the
   * business row for each list (Retention.readableSince, ./retention.ts), so a change holds
   * at once on every instance, whichever database holds the events.
   */
  keptSince: Date
  type?: string
  /** The dashboard filters by key; the API reads every key's events. */
  keyId?: string
  from?: Date
  to?: Date
  after: Position | null
  limit: number
}

export type StoredEventRow = typeof analyticsEvents.$inferSelect

/** An event on the wire (`StoredEvent` in src/areas/analytics/model.ts) and on the dashboard. */
export type EventRecord = ReturnType<typeof toEventRecord>

/**
 * The business's events a read may answer: inside its retention (`keptSince`) and not those
 * of a person whose erasure is pending, received before it was asked for (docs/api.md, "Erasure").
 *
 * Each event is tested against the pending requests' identifiers as two uncorrelated `in`
 * subqueries, which PostgreSQL runs once and hashes (a lookup a row; ./erasure.ts keeps
 * them to 100 a business); only an event that names one is checked against the requests'
 * times (the `and` stops at the first false). A per-request predicate on every row made a
 * page up to twice as slow with 100 pending (docs/decisions.md, "Fair erasures, cheap to
 * read past").
 */
function readable(businessId: string, keptSince: Date) {
  const e = analyticsEvents
  const x = analyticsErasures
  const pending = sql`${x.businessId} = ${businessId} and ${x.status} = 'pending'`
  return [
    eq(e.businessId, businessId),
    gte(e.occurredAt, keptSince),
    sql`not (coalesce(${e.personId} in (select ${x.personId} from ${x} where ${pending} and ${x.personId} is not null)
          or ${e.anonymousId} in (select ${x.anonymousId} from ${x} where ${pending} and ${x.anonymousId} is not null), false)
        and exists (select 1 from ${x} where ${pending}
          and ${x.requestedAt} > ${e.receivedAt} and (${x.personId} = ${e.personId} or ${x.anonymousId} = ${e.anonymousId})))`,
  ]
}

function filtered(businessId: string, filter: Omit<EventFilter, 'after' | 'limit'>) {
  const e = analyticsEvents
  return [
    ...readable(businessId, filter.keptSince),
    filter.type === undefined ? undefined : eq(e.eventType, filter.type),
    filter.keyId === undefined ? undefined : eq(e.keyId, filter.keyId),
    filter.from === undefined ? undefined : gte(e.occurredAt, filter.from),
    filter.to === undefined ? undefined : lt(e.occurredAt, filter.to),
  ]
}

/** A page of a business's events, newest first by (occurredAt, id). */
export async function listEvents(db: Db, businessId: string, filter: EventFilter): Promise<Page<EventRecord>> {
  const e = analyticsEvents
  const rows = await db
    .select()
    .from(e)
    .where(and(...filtered(businessId, filter), before(e.occurredAt, e.id, filter.after)))
    .orderBy(desc(e.occurredAt), desc(e.id))
    .limit(filter.limit + 1)
  return toPage(rows, filter.limit, (row) => positionCursor(row.occurredAt, row.id), toEventRecord)
}

/**
 * How long before its arrival an event may be dated and still reach a live view. The live
 * query walks the events' key from here on (no index by arrival: every insert would pay for
 * it), so this bounds its cost to the events of the last hour; an event dated earlier (a
 * backfill) is listed in its place on the next load of the page (docs/decisions.md).
 */
export const LIVE_LOOKBACK_MS = 60 * 60 * 1000

/**
 * The events that ARRIVED after `since`, a position in arrival order (receivedAt, id): what
 * a live view shows as new, newest arrival first, at most `limit`; `more` says that earlier
 * arrivals were left out. By arrival, not by the event's own time: an event dated a day
 * ahead would otherwise stay "newest" and hide every later arrival. `newest` is the
 * position to ask from next time (`since` again when nothing came).
 */
export async function listArrivedEvents(
  db: Db,
  businessId: string,
  filter: Omit<EventFilter, 'after' | 'to'> & { since: Position },
): Promise<{ data: EventRecord[]; more: boolean; newest: string }> {
  const e = analyticsEvents
  const rows = await db
    .select()
    .from(e)
    .where(
      and(
        ...filtered(businessId, filter),
        gte(e.occurredAt, new Date(filter.since.at.getTime() - LIVE_LOOKBACK_MS)),
        sql`(${e.receivedAt}, ${e.id}) > (${filter.since.at.toISOString()}::timestamptz, ${filter.since.id}::uuid)`,
      ),
    )
    .orderBy(desc(e.receivedAt), desc(e.id))
    .limit(filter.limit + 1)
  const shown = rows.slice(0, filter.limit)
  const top = shown[0]
  return {
    data: shown.map(toEventRecord),
    more: rows.length > filter.limit,
    newest: top ? positionCursor(top.receivedAt, top.id) : positionCursor(filter.since.at, filter.since.id),
  }
}

/** Where a live view starts: after the latest arrival among the events a page shows, else now. */
export function arrivalPosition(shown: readonly EventRecord[], now: Date): string {
  let latest: EventRecord | undefined
  // In the live query's order, (receivedAt, id): the events of one request share their receivedAt.
  for (const event of shown) {
    if (latest === undefined || event.receivedAt > latest.receivedAt || (event.receivedAt === latest.receivedAt && event.id > latest.id))
      latest = event
  }
  return latest ? positionCursor(new Date(latest.receivedAt), latest.id) : positionCursor(now, '00000000-0000-0000-0000-000000000000')
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
