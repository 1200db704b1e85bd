import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import type { Retention } from '../events/retention.ts'
import { arrivalPosition, EVENT_TYPE_PATTERN, listArrivedEvents, listEvents, type EventFilter } from '../events/read.ts'
import type { KeyRecord, KeyService } from '../keys/service.ts'
import { ApiError } from '../errors.ts'
import { decodePosition, type Position } from '../shared/paging.ts'
import { parseIsoTime } from '../shared/time.ts'
import { isAcceptedDate } from '../shared/validation.ts'
import { eventItem, eventsPage, filterQuery, type EventFilterValues } from './events-views.ts'
import { NO_SUCH_PAGE, renderFailures } from './failures.ts'
import { FormField } from './forms.ts'
import { html } from './html.ts'
import { htmlPage } from './http.ts'
import type { memberMacro } from './member.ts'
import { EVENTS_PATH } from './views.ts'

/** Events on a page, and the most one answer of the live view adds. */
const EVENTS_PAGE = 50
const LIVE_BATCH = 50

const EVENT_TYPE = new RegExp(EVENT_TYPE_PATTERN)
// What an <input type="datetime-local"> sends, read as UTC (the dashboard's times are UTC).
/** A date and time as typed in a filter, read as UTC: `2026-05-01 14:00`, with `T` or a space, seconds optional. */
const LOCAL_TIME = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d{1,3})?)?$/

const Filters = { key: FormField, type: FormField, from: FormField, to: FormField }

/**
 * The business's events: newest first, filtered by key, type and
 * time, a page at a time, and a live view whose script asks for newer ones. Every read
 * goes through src/events/read.ts with the member's business: another business's events
 * never appear, whatever a filter or cursor says.
 */
export function eventsPlugin(deps: {
  /** The event store's database (EVENTS_DATABASE_URL's, else the service's). */
  events: Db
  keys: KeyService
  member: ReturnType<typeof memberMacro>
  retention: Retention
}) {
  const { events, keys, retention } = deps

  /** The filters as typed, read into a query; problems say what cannot be used (and nothing is read). */
  function readFilters(values: EventFilterValues, businessKeys: KeyRecord[]) {
    const problems: string[] = []
    const filter: Omit<EventFilter, 'after' | 'limit' | 'keptSince'> = {}
    if (values.key !== '') {
      if (businessKeys.some((k) => k.id === values.key)) filter.keyId = values.key
      else problems.push("That key is not one of this business's keys; choose one in the list.")
    }
    if (values.type !== '') {
      if (EVENT_TYPE.test(values.type)) filter.type = values.type
      else
        problems.push(
          `"${values.type.slice(0, 80)}" is no event type: types are 1-64 letters, digits, "_", ".", ":" or "-", like page_view.`,
        )
    }
    for (const [field, label] of [
      ['from', 'From'],
      ['to', 'Before'],
    ] as const) {
      if (values[field] === '') continue
      const time = readTime(values[field])
      if (time === null) problems.push(`${label}: "${values[field].slice(0, 40)}" is not a date and time; pick one, like 2026-05-01 14:00.`)
      else filter[field] = time
    }
    if (filter.from && filter.to && filter.from >= filter.to) problems.push('"Before" must be later than "From".')
    return { filter, problems }
  }

  return new Elysia({ name: 'dashboard/events' })
    .use(deps.member)
    .onError(renderFailures(NO_SUCH_PAGE))
    .get(
      '/events',
      async ({ member, query }) => {
        const values = valuesOf(query)
        const businessKeys = await keys.list(member.businessId)
        const { filter, problems } = readFilters(values, businessKeys)
        const after = positionOf(query.cursor)
        // Read before the page: an event arriving meanwhile is shown live rather than missed.
        const now = new Date()
        const page =
          problems.length > 0
            ? { data: [], nextCursor: null }
            : await listEvents(events, member.businessId, {
                ...filter,
                keptSince: await retention.readableSince(member.businessId),
                after,
                limit: EVENTS_PAGE,
              })
        // Live on the newest page only, and only when the range stays open towards now.
        const live =
          after === null && filter.to === undefined && problems.length === 0
            ? {
                url: `${EVENTS_PATH}/live${filterQuery({ ...values, from: filter.from?.toISOString() ?? '' }, { business: member.businessId })}`,
                // By arrival (src/events/read.ts): an event dated ahead of its arrival hides nothing.
                since: arrivalPosition(page.data, now),
              }
            : null
        return htmlPage(
          problems.length > 0 ? 400 : 200,
          eventsPage(member, {
            filters: values,
            problems,
            keys: businessKeys,
            events: page.data,
            now,
            older: page.nextCursor,
            first: after === null,
            live,
          }),
        )
      },
      { member: 'page', query: t.Object({ ...Filters, cursor: FormField }) },
    )
    .get(
      '/events/live',
      async ({ member, query }) => {
        const values = valuesOf(query)
        const businessKeys = await keys.list(member.businessId)
        const { filter, problems } = readFilters({ ...values, to: '' }, businessKeys)
        if (problems.length > 0) throw new ApiError('invalid_request', problems.join(' '))
        const since = positionOf(query.since)
        if (since === null) throw new ApiError('invalid_request', 'since must be the position the page gave out.')
        const keptSince = await retention.readableSince(member.businessId)
        const newer = await listArrivedEvents(events, member.businessId, { ...filter, keptSince, since, limit: LIVE_BATCH })
        const byId = new Map(businessKeys.map((k) => [k.id, k]))
        const now = new Date()
        return Response.json(
          {
            data: newer.data,
            more: newer.more,
            newest: newer.newest,
            html: html`${newer.data.map((e) => eventItem(e, byId, now))}`.value,
          },
          { headers: { 'cache-control': 'no-store' } },
        )
      },
      { member: 'json', query: t.Object({ ...Filters, since: FormField, business: FormField }) },
    )
}

function valuesOf(query: Partial<Record<keyof typeof Filters, string>>): EventFilterValues {
  return { key: query.key?.trim() ?? '', type: query.type?.trim() ?? '', from: query.from?.trim() ?? '', to: query.to?.trim() ?? '' }
}

/** A cursor the pages gave out; a mangled one is the newest page (like the audit trail). */
function positionOf(cursor: string | undefined): Position | null {
  if (cursor === undefined || cursor === '') return null
  try {
    return decodePosition(cursor)
  } catch {
    return null
  }
}

/** A datetime-local value (UTC) or an ISO date-time with its zone; null when it is neither. */
function readTime(value: string): Date | null {
  const typed = value.trim()
  const iso = LOCAL_TIME.test(typed) ? `${typed.replace(' ', 'T')}${typed.length === 16 ? ':00' : ''}Z` : typed
  const time = parseIsoTime(iso)
  return time && isAcceptedDate(time) ? time : null
}
