import { USAGE_RETENTION } from './recorder.ts'

// What of the usage tables is past USAGE_RETENTION. The event maintenance deletes it
// (src/events/maintenance.ts): in bounded batches, at start-up and hourly, by the one
// instance that holds the maintenance lock, not by every instance's recorder at once.

/** A usage table, the time column its rows age by, and the instant before which they go. */
export interface ExpiredUsage {
  table: string
  column: 'at' | 'hour'
  before: Date
}

/** Each usage table's rows past its retention at `now` (each table has an index on that column). */
export function expiredUsage(now: number): ExpiredUsage[] {
  const before = (ms: number) => new Date(now - ms)
  return [
    { table: 'key_usage_minutes', column: 'at', before: before(USAGE_RETENTION.minutes) },
    { table: 'key_usage_hours', column: 'at', before: before(USAGE_RETENTION.hours) },
    { table: 'key_usage_days', column: 'at', before: before(USAGE_RETENTION.days) },
    { table: 'key_refused_origins', column: 'hour', before: before(USAGE_RETENTION.origins) },
    { table: 'key_refused_ips', column: 'hour', before: before(USAGE_RETENTION.origins) },
    { table: 'key_refused_others', column: 'hour', before: before(USAGE_RETENTION.origins) },
  ]
}
