import { causeCodes } from '../src/errors.ts'

/**
 * Which failures mean "no writable primary answers here" (a 503 to the client, a state
 * change in the log) rather than a fault of one statement: a database that is down, hangs
 * or refuses connections, and a server that answers but takes no writes (a standby in
 * recovery, or a primary being failed over). Drivers put their code
 * (a SQLSTATE, a socket error) on an inner cause that Drizzle wraps; causeCodes reads the
 * whole chain.
 */
const UNAVAILABLE_CODES = new Set([
  // The path to the server, as Node and postgres.js name its failures.
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  // A host name that does not resolve (now): failover by DNS moves the name.
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  // Class 08, connection exception.
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '25006', // read_only_sql_transaction: a standby (or a server set read-only) took the write
  '57014', // query_canceled: our statement_timeout, or the deadline's cancel request
  '57P01', // admin_shutdown: a stop, or our own pool's connections ended on a read-only server
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, shutting down, or in recovery
  '57P04', // database_dropped
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database was dropped
  'DATABASE_DEADLINE',
  'DATABASE_DOWN',
  'DATABASE_NOT_PRIMARY',
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

/**
 * The server answered, but is no writable primary: in recovery (a standby), or read-only
 * (db/deadline.ts `probe`). The database is unavailable until a probe finds a primary.
 */
export class DatabaseNotPrimaryError extends Error {
  readonly code = 'DATABASE_NOT_PRIMARY'
  constructor(state: { inRecovery: boolean; readOnly: boolean }) {
    super(
      state.inRecovery
        ? 'the database server is a standby in recovery, not a primary'
        : 'the database server takes no writes (transaction_read_only is on)',
    )
  }
}

export function isDatabaseUnavailable(error: unknown): boolean {
  return causeCodes(error).some((code) => UNAVAILABLE_CODES.has(code))
}
