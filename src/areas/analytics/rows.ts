import type { Static } from 'elysia'
import type { Grant } from '../../access/gate.ts'
import { keptSince, type Kept } from '../../events/retention.ts'
import { DAY_MS, EARLIEST_TIMESTAMP, MAX_FUTURE_MS } from '../../events/time-bounds.ts'
import type { EventRow } from '../../events/write.ts'
import { parseTime } from '../../shared/time.ts'
import { assertStorableJson, fieldPath, invalidField, recordPath } from '../../shared/validation.ts'
import type { TrackedEvent } from './model.ts'

/**
 * The stored form of a request's events, with what the schema cannot check: that a
 * `timestamp` is a real date inside the accepted window, and that `properties` keep to
 * the depth, name and size rules. (Every string of the body was already screened for
 * what PostgreSQL cannot store, src/http/json-body.ts: the event's own fields are not
 * walked again.) Any failure refuses the whole request before anything is written.
 */
export function toEventRows(
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

/**
 * A checked event's stored row: the sender's id or a UUIDv7, empty URLs as null, the times
 * as given (the caller checked `occurred`).
 */
export function toEventRow(
  event: Static<typeof TrackedEvent>,
  key: { businessId: string; id: string },
  origin: string | null,
  occurred: string,
  received: string,
): EventRow {
  return {
    id: event.id ?? Bun.randomUUIDv7(),
    business_id: key.businessId,
    key_id: key.id,
    origin,
    event_type: event.eventType,
    url: event.url || null,
    referrer: event.referrer || null,
    anonymous_id: event.anonymousId ?? null,
    person_id: event.personId ?? null,
    properties: event.properties ?? {},
    occurred_at: occurred,
    received_at: received,
    untimed: event.id !== undefined && event.timestamp === undefined,
  }
}
