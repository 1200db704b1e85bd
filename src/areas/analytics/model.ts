import { t } from 'elysia'
import { CursorQuery, limitQuery, pageSchema } from '../shared/paging.ts'
import { oneOrBatch, PropertyBag } from '../shared/validation.ts'

export const MAX_EVENTS_PER_REQUEST = 500

/** An accepted `timestamp` lies between this and 24 hours after the request arrived. */
export const EARLIEST_TIMESTAMP = Date.parse('2000-01-01T00:00:00Z')
export const MAX_FUTURE_MS = 24 * 60 * 60 * 1000

export const EventType = t.String({
  pattern: '^[A-Za-z0-9_.:-]{1,64}$',
  error: 'must be 1-64 characters of letters, digits, "_", ".", ":" or "-", like "page_view"',
  description: 'What happened, 1-64 characters of [A-Za-z0-9_.:-]; page views use `page_view`.',
})

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/

/** An RFC 3339 date-time with a zone; parseIsoTime then refuses impossible ones (Feb 30). */
export function isoTime(description: string) {
  return t.String({
    maxLength: 40,
    pattern: ISO_TIME.source,
    error: 'must be an ISO-8601 date-time with a time zone, like "2026-01-31T12:00:00Z"',
    description,
  })
}

/** The instant of an ISO_TIME string, or null when a part is out of range (JS would roll it over). */
export function parseIsoTime(value: string): Date | null {
  const parts = ISO_TIME.exec(value)
  if (!parts) return null
  const [year, month, day, hour, minute, second, offsetHours = 0, offsetMinutes = 0] = parts
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part)))
  const calendar = new Date(0)
  calendar.setUTCFullYear(year!, month! - 1, day!)
  const realDay = calendar.getUTCMonth() === month! - 1 && calendar.getUTCDate() === day
  if (!realDay || hour! > 23 || minute! > 59 || second! > 59 || offsetHours > 23 || offsetMinutes > 59) return null
  const time = new Date(value)
  return Number.isNaN(time.getTime()) ? null : time
}

export const TrackedEvent = t.Object({
  eventType: EventType,
  url: t.Optional(t.String({ maxLength: 2048, description: 'The page URL, at most 2048 characters; an empty string is stored as null.' })),
  referrer: t.Optional(
    t.String({ maxLength: 2048, description: 'The referring URL, at most 2048 characters; an empty string is stored as null.' }),
  ),
  anonymousId: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'A visitor id of your own, 1-200 characters.' })),
  personId: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Your id of the person, if known; 1-200 characters.' })),
  properties: t.Optional(PropertyBag),
  timestamp: t.Optional(isoTime('When it happened (default: when the request arrived); from 2000-01-01 to 24 hours after the request.')),
})

export const TrackBody = oneOrBatch(
  TrackedEvent,
  t.Object({ events: t.Array(TrackedEvent, { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST }) }),
  'events',
)

export const Accepted = t.Object({
  accepted: t.Integer({ description: 'Events committed by this request.' }),
})

export const EventQuery = t.Object({
  type: t.Optional(EventType),
  from: t.Optional(isoTime('Events that occurred at or after this time.')),
  to: t.Optional(isoTime('Events that occurred before this time.')),
  limit: limitQuery({ default: 100, max: 1000 }),
  cursor: CursorQuery,
})

export const StoredEvent = t.Object({
  id: t.String(),
  eventType: t.String(),
  url: t.Nullable(t.String()),
  referrer: t.Nullable(t.String()),
  anonymousId: t.Nullable(t.String()),
  personId: t.Nullable(t.String()),
  properties: t.Record(t.String(), t.Unknown()),
  timestamp: t.String({ description: 'When the event occurred (its own timestamp, else the receive time).' }),
  receivedAt: t.String(),
  keyId: t.String(),
  origin: t.Nullable(t.String()),
})

export const EventPage = pageSchema(StoredEvent)
