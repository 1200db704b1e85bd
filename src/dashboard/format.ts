const relative = new Intl.RelativeTimeFormat('en', { numeric: 'always' })

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
]

/**
 * "3 minutes ago", "in 2 days"; under a minute either way: "just now". Rounded to the
 * minute first, so that a grace of 7 days shown a second later still reads "in 7 days".
 */
export function relativeTime(at: Date, now: Date): string {
  const exact = (at.getTime() - now.getTime()) / 1000
  if (Math.abs(exact) < 60) return 'just now'
  const seconds = Math.round(exact / 60) * 60
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size) return relative.format(Math.trunc(seconds / size), unit)
  }
  return 'just now'
}

/** "2026-05-01 14:03 UTC": unambiguous for a team spread over time zones. */
export function formatDateTime(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

/** "2026-05-01" (UTC), the value of an `<input type="date">`. */
export function formatDate(at: Date): string {
  return at.toISOString().slice(0, 10)
}

/**
 * The earliest day the expiry picker offers: tomorrow (UTC). A key expires at 00:00 UTC
 * on the day picked, so today has already begun and would be refused.
 */
export function firstExpiryDay(now: Date): string {
  return formatDate(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)))
}

/** "2026-05-01 14:03:27 UTC": an event's time, to the second. */
export function formatInstant(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`
}
