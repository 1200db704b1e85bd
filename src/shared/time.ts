import { t } from 'elysia'
import { DATE_RANGE_TEXT, invalidField, isAcceptedDate } from './validation.ts'

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

/**
 * A date-time a client sent, checked: a real instant (no Feb 30) in the accepted range
 * (1970 to 9999), else a 400 naming `field`.
 */
export function parseTime(value: string, field: string, where: 'body' | 'query'): Date {
  const time = parseIsoTime(value)
  if (time === null) {
    const reason = `${value} is not a real date-time; use an ISO-8601 date-time like "2026-01-31T12:00:00Z"`
    throw invalidField(field, reason, where)
  }
  if (!isAcceptedDate(time)) throw invalidField(field, `${value} is outside the accepted range, ${DATE_RANGE_TEXT}`, where)
  return time
}
