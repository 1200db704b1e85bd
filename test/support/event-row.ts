import type { EventRow } from '../../src/events/write.ts'

/** A page view as the event writer takes it (src/events/write.ts), with `more` over its defaults. */
export function eventRow(more: Partial<EventRow> = {}): EventRow {
  return {
    id: crypto.randomUUID(),
    business_id: 'b0000000-0000-4000-8000-000000000001',
    key_id: 'k0000000-0000-4000-8000-000000000001',
    origin: 'https://www.example.com',
    event_type: 'page_view',
    url: 'https://www.example.com/',
    referrer: null,
    anonymous_id: 'a-1',
    person_id: null,
    properties: {},
    occurred_at: '2026-03-01T10:00:00.000Z',
    received_at: '2026-03-01T10:00:01.000Z',
    untimed: false,
    ...more,
  }
}
