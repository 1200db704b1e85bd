import { causeCodes } from '../src/errors.ts'

/**
 * Which failures mean "the database is not answering" (a 503 to the client, a state change
 * in the log) rather than a fault of one statement. Drivers put their code (a SQLSTATE, a
 * socket error) on an inner cause that Drizzle wraps; causeCodes reads the whole chain.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57014', // query_canceled: our statement_timeout, or the deadline's cancel request
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database was dropped
  'DATABASE_DEADLINE',
  'DATABASE_DOWN',
])

/** SQLSTATE query_canceled: a statement_timeout, or the cancel request sent after a deadline. */
export const QUERY_CANCELED = '57014'

/** A statement that did not answer within the deadline (db/deadline.ts). */
export class DatabaseDeadlineError extends Error {
  readonly code = 'DATABASE_DEADLINE'
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`)
  }
}

/** Refused at once while the database is known to be down (db/availability.ts). */
export class DatabaseDownError extends Error {
  readonly code = 'DATABASE_DOWN'
  constructor() {
    super('the database is down; waiting for it to answer a probe')
  }
}

export function isDatabaseUnavailable(error: unknown): boolean {
  return causeCodes(error).some((code) => UNAVAILABLE_CODES.has(code))
}
