import { t } from 'elysia'
import { EVENT_TYPE_PATTERN } from '../../events/read.ts'
import { CursorQuery, limitQuery, pageSchema } from '../../shared/paging.ts'
import { isoTime } from '../../shared/time.ts'
import { oneOrBatch, PropertyBag, Uuid } from '../../shared/validation.ts'
import { Chars } from '../../shared/characters.ts'

export const MAX_EVENTS_PER_REQUEST = 500

export const EventType = t.String({
  pattern: EVENT_TYPE_PATTERN,
  error: 'must be 1-64 characters of letters, digits, "_", ".", ":" or "-", like "page_view"',
  description: 'What happened, 1-64 characters of [A-Za-z0-9_.:-]; page views use `page_view`.',
})

export const TrackedEvent = t.Object({
  // The shared Uuid rule (a pattern, not `format: 'uuid'`: see src/shared/uuid.ts).
  id: t.Optional(
    t.String({
      ...Uuid,
      description:
        'Your UUID for this event, set once when it is created: a business stores an id once, so a retry of the same event is acknowledged and not stored again. Default: a time-ordered UUID from the service.',
    }),
  ),
  eventType: EventType,
  url: t.Optional(Chars({ maxLength: 2048, description: 'The page URL, at most 2048 characters; an empty string is stored as null.' })),
  referrer: t.Optional(
    Chars({ maxLength: 2048, description: 'The referring URL, at most 2048 characters; an empty string is stored as null.' }),
  ),
  anonymousId: t.Optional(Chars({ minLength: 1, maxLength: 200, description: 'A visitor id of your own, 1-200 characters.' })),
  personId: t.Optional(Chars({ minLength: 1, maxLength: 200, description: 'Your id of the person, if known; 1-200 characters.' })),
  properties: t.Optional(PropertyBag),
  timestamp: t.Optional(isoTime('When it happened (default: when the request arrived); from 2000-01-01 to 24 hours after the request.')),
})

export const TrackBody = oneOrBatch(
  TrackedEvent,
  t.Object({ events: t.Array(TrackedEvent, { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST }) }),
  'events',
)

export const Accepted = t.Object({
  accepted: t.Integer({
    description: 'Events processed: stored by this request, or already stored by an earlier one with the same `id`.',
  }),
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
