import { Elysia, type Static } from 'elysia'
import type { Grant } from '../../access/gate.ts'
import { directRouteDetail } from '../../http/direct-route.ts'
import type { RouteAccess } from '../../access/scopes.ts'
import { isDatabaseUnavailable } from '../../../db/faults.ts'
import type { AreaDeps } from '../deps.ts'
import { decodePosition, pageSize } from '../../shared/paging.ts'
import { assertStorableJson, fieldPath, invalidField, recordPath } from '../../shared/validation.ts'
import { parseTime } from '../../shared/time.ts'
import { createGroupCommitter } from '../../events/group-commit.ts'
import { Accepted, EARLIEST_TIMESTAMP, EventPage, EventQuery, MAX_FUTURE_MS, TrackBody, type TrackedEvent } from './model.ts'
import { listEvents } from '../../events/read.ts'
import { DAY_MS, keptSince, type Kept } from '../../events/retention.ts'
import { eventWriter, toEventRow, type EventRow } from '../../events/write.ts'

/**
 * POST /api/v0/analytics, the page-view route: a direct route (src/http/direct-route.ts),
 * the service's hottest path. Events wait in a group commit (./group-commit.ts) so that
 * concurrent requests share one insert.
 */
export function trackRoutes({ db, direct, onShutdown, reportIngest, ingest, retention }: AreaDeps) {
  const writer = createGroupCommitter<EventRow>({
    insert: ingest?.store ?? eventWriter(db, ingest?.copyIn),
    maxQueuedRows: ingest?.maxQueuedRows,
    concurrency: ingest?.concurrency,
    isUnavailable: isDatabaseUnavailable,
  })
  onShutdown(() => writer.close())
  // A full queue refuses before the body is read: a flood is shed without parsing it.
  const trackAccess: RouteAccess = { scope: 'ANALYTICS_WRITE', public: true, checkRoom: (businessId) => writer.checkRoom(businessId) }
  reportIngest?.(() => ({ queuedRows: writer.stats.queuedRows, committedRows: writer.stats.rows }))

  const spec = { method: 'POST', path: '/api/v0/analytics', access: trackAccess, body: TrackBody.schema } as const
  const handle = direct.route(spec, async (grant, body, request) => {
    TrackBody.check({ body })
    const track = body as Static<typeof TrackBody.schema>
    // A cached value on all but the first request of a business in 10 s (src/events/retention.ts).
    const keeping = retention.keptFor(grant.key.businessId)
    const kept = keeping instanceof Promise ? await keeping : keeping
    const rows = 'events' in track ? toEventRows(track.events, 'events', grant, kept) : toEventRows([track], null, grant, kept)
    await writer.write(grant.key.businessId, rows, request)
    return { status: 202, body: { accepted: rows.length } }
  })
  return new Elysia({ name: 'area/analytics/track' }).post(spec.path, ({ request }) => handle(request), {
    response: { 202: Accepted },
    detail: directRouteDetail(spec, {
      summary: 'Track one event, or a batch of up to 500 as {"events": [...]}',
      description: 'Answers 202 once every event of the request is committed; a batch is stored whole or not at all.',
      tags: ['analytics'],
    }),
  })
}

/** GET /api/v0/analytics: a business's events, for servers. */
export function analyticsRoutes({ db, access, retention }: AreaDeps) {
  return new Elysia({ name: 'area/analytics', prefix: '/api/v0' }).use(access).get(
    '/analytics',
    async ({ query, access: { key } }) => {
      const from = query.from === undefined ? undefined : parseTime(query.from, 'from', 'query')
      const to = query.to === undefined ? undefined : parseTime(query.to, 'to', 'query')
      if (from && to && from >= to) {
        throw invalidField('to', `must be later than "from" (${query.from}); the range is from <= time < to`, 'query')
      }
      const limit = pageSize(query.limit, 100)
      return listEvents(db, key.businessId, {
        type: query.type,
        from,
        to,
        after: decodePosition(query.cursor),
        limit,
        operatorRetentionDays: retention.operatorDays,
      })
    },
    {
      access: { scope: 'ANALYTICS_READ', public: false },
      query: EventQuery,
      response: EventPage,
      detail: {
        summary: 'List events, newest first, by type and time range, in cursor pages',
        tags: ['analytics'],
      },
    },
  )
}

/**
 * The stored form of a request's events, with what the schema cannot check: that a
 * `timestamp` is a real date inside the accepted window, and that `properties` keep to
 * the depth, name and size rules. (Every string of the body was already screened for
 * what PostgreSQL cannot store, src/http/json-body.ts: the event's own fields are not
 * walked again.) Any failure refuses the whole request before anything is written.
 */
function toEventRows(
  events: readonly Static<typeof TrackedEvent>[],
  batchKey: string | null,
  { key, origin }: Grant,
  kept: Kept,
): EventRow[] {
  const receivedAt = Date.now()
  const received = new Date(receivedAt).toISOString()
  const earliest = Math.max(EARLIEST_TIMESTAMP, keptSince(kept, receivedAt))
  return events.map((event, index) => {
    const path = recordPath(batchKey, index)
    if (event.properties !== undefined) assertStorableJson(event.properties, fieldPath(path, 'properties'))
    let occurred = received
    if (event.timestamp !== undefined) {
      const field = fieldPath(path, 'timestamp')
      const time = parseTime(event.timestamp, field, 'body')
      if (time.getTime() < earliest || time.getTime() > receivedAt + MAX_FUTURE_MS) {
        const bound =
          time.getTime() > receivedAt
            ? `at most 24 hours after the request: ${new Date(receivedAt + MAX_FUTURE_MS).toISOString()}`
            : `not before ${new Date(earliest).toISOString()}${earliest === EARLIEST_TIMESTAMP ? '' : ` (${retentionReason(kept, receivedAt)})`}`
        throw invalidField(
          field,
          `${event.timestamp} is outside the accepted range: ${bound} (now ${received}). Send the time the event happened, or leave timestamp out to use the receive time`,
        )
      }
      occurred = time.toISOString()
    }
    return toEventRow(event, key, origin, occurred, received)
  })
}

/** Why the earliest accepted time is where it is: the business's days, or a change of its retention. */
function retentionReason(kept: Kept, now: number): string {
  return kept.expiredBefore !== null && kept.expiredBefore > now - kept.days * DAY_MS
    ? `this business keeps events ${kept.days} days, and a change of its retention expired those before this time for good`
    : `this business keeps events ${kept.days} days`
}
