// The times an event may carry, as ingestion checks them and as the partitions must cover
// them (docs/api.md, "Retention"): one definition for both.

export const DAY_MS = 86_400_000

/** The earliest `timestamp` accepted, whatever a business keeps. */
export const EARLIEST_TIMESTAMP = Date.parse('2000-01-01T00:00:00Z')

/** How far after its request an event's `timestamp` may be: its month's partition must exist by then. */
export const MAX_FUTURE_MS = DAY_MS
