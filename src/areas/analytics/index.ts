import { Elysia, type Static } from 'elysia'
import { directRouteDetail } from '../../http/direct-route.ts'
import type { RouteAccess } from '../../access/scopes.ts'
import { isDatabaseUnavailable } from '../../../db/faults.ts'
import type { AreaDeps } from '../deps.ts'
import { decodePosition, pageSize } from '../../shared/paging.ts'
import { invalidField } from '../../shared/validation.ts'
import { parseTime } from '../../shared/time.ts'
import { createGroupCommitter } from '../../events/group-commit.ts'
import { Accepted, EventPage, EventQuery, TrackBody } from './model.ts'
import { listEvents } from '../../events/read.ts'
import { eventWriter, type EventRow } from '../../events/write.ts'
import { toEventRows } from './rows.ts'

/**
 * POST /api/v0/analytics, the page-view route: a direct route (src/http/direct-route.ts),
 * the service's hottest path. Events wait in a group commit (src/events/group-commit.ts) so that
 * concurrent requests share one insert.
 */
export function trackRoutes({ events, direct, onShutdown, reportIngest, ingest, retention }: AreaDeps) {
  const writer = createGroupCommitter<EventRow>({
    insert: ingest?.store ?? eventWriter(events, ingest?.copyIn),
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
    const kept = await retention.keptFor(grant.key.businessId)
    const rows = 'events' in track ? toEventRows(track.events, 'events', grant, kept) : toEventRows([track], null, grant, kept)
    await writer.write(grant.key.businessId, rows, request)
    return { status: 202, body: { accepted: rows.length } }
  })
  return new Elysia({ name: 'area/analytics/track' }).post(spec.path, ({ request, server }) => handle(request, server), {
    response: { 202: Accepted },
    detail: directRouteDetail(spec, {
      summary: 'Track one event, or a batch of up to 500 as {"events": [...]}',
      description: 'Answers 202 once every event of the request is committed; a batch is stored whole or not at all.',
      tags: ['analytics'],
    }),
  })
}

/** GET /api/v0/analytics: a business's events, for servers. */
export function analyticsRoutes({ events, keyChain, retention }: AreaDeps) {
  return new Elysia({ name: 'area/analytics', prefix: '/api/v0' }).use(keyChain).get(
    '/analytics',
    async ({ query, grant: { key } }) => {
      const from = query.from === undefined ? undefined : parseTime(query.from, 'from', 'query')
      const to = query.to === undefined ? undefined : parseTime(query.to, 'to', 'query')
      if (from && to && from >= to) {
        throw invalidField('to', `must be later than "from" (${query.from}); the range is from <= time < to`, 'query')
      }
      const limit = pageSize(query.limit, 100)
      const after = decodePosition(query.cursor)
      return listEvents(events, key.businessId, {
        type: query.type,
        from,
        to,
        after,
        limit,
        keptSince: await retention.readableSince(key.businessId),
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
