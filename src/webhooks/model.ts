import { t } from 'elysia'
import { DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES } from '../../db/schema/index.ts'

/** At most this many endpoints a business. */
export const MAX_ENDPOINTS = 10

const EventType = t.UnionEnum(WEBHOOK_EVENT_TYPES, { error: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` })

const Url = t.String({ minLength: 1, maxLength: 2_048, error: "must be the receiver's https:// URL, up to 2048 characters" })
const Events = t.Array(EventType, {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length,
  uniqueItems: true,
  error: `must list the events to send, each once: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
})
const Description = t.Nullable(t.String({ maxLength: 500, error: 'must be text of at most 500 characters, or null' }))

export const NewEndpoint = t.Object({ url: Url, events: Events, description: t.Optional(Description) })
export const EndpointChanges = t.Object(
  {
    url: t.Optional(Url),
    events: t.Optional(Events),
    description: t.Optional(Description),
    enabled: t.Optional(t.Boolean({ error: 'must be true (send again, after a disabling) or false (stop sending)' })),
  },
  { minProperties: 1, error: 'must change at least one of url, events, description, enabled' },
)

export const EndpointRecordSchema = t.Object(
  {
    id: t.String(),
    businessId: t.String(),
    url: t.String(),
    description: t.Nullable(t.String()),
    events: t.Array(t.String()),
    enabled: t.Boolean(),
    disabledAt: t.Nullable(t.String({ description: 'When it was disabled: by a change, or after failing for 5 days' })),
    failingSince: t.Nullable(t.String({ description: 'The first failed delivery since the last success, if any' })),
    createdAt: t.String(),
    updatedAt: t.String(),
  },
  { description: 'A webhook endpoint; its signing secret is shown once, as `secret`, in the create answer.' },
)
export type EndpointRecord = typeof EndpointRecordSchema.static

export const CreatedEndpointSchema = t.Composite([
  EndpointRecordSchema,
  t.Object({ secret: t.String({ description: 'whsec_ and base64: verify deliveries with it. Shown this once.' }) }),
])

export const DeliveryRecordSchema = t.Object({
  id: t.String(),
  endpointId: t.String(),
  eventId: t.String({ description: 'Also the webhook-id header, the same on every attempt' }),
  event: t.String(),
  status: t.UnionEnum(DELIVERY_STATUSES),
  attempts: t.Integer(),
  lastStatus: t.Nullable(t.Integer({ description: "The receiver's last answer code; null when it did not answer" })),
  lastError: t.Nullable(t.String()),
  lastAttemptAt: t.Nullable(t.String()),
  nextAttemptAt: t.Nullable(t.String({ description: 'While pending' })),
  deliveredAt: t.Nullable(t.String()),
  createdAt: t.String(),
})
export type DeliveryRecord = typeof DeliveryRecordSchema.static
