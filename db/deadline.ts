import type { Writable } from 'node:stream'
import type { Sql } from 'postgres'
import type { Availability } from './availability.ts'
import { DatabaseDeadlineError, DatabaseDownError, DatabaseNotPrimaryError } from './faults.ts'

/**
 * What a bounded client asks of availability: refuse at once while down, note a failure,
 * fail waiting statements when the database is found down. Background work passes one
 * whose `failed` notes nothing (db/client.ts): its failures never decide availability.
 */
export type StatementGuard = Pick<Availability, 'admit' | 'suspicion' | 'failed' | 'abortOnDown'>

/**
 * A postgres.js client whose every statement answers within `ms`, or fails with
 * DatabaseDeadlineError (DatabaseDownError at once while the database is known down).
 * postgres.js has no client-side query timeout: a server that hangs, or a network path that
 * drops packets without a reset, would hold a request until the socket gives up, minutes
 * later. The server's own statement_timeout covers a live server; this covers the path.
 *
 * The caller gets the error; the statement itself is not cancelled. A cancel request would
 * travel the same dead path, the server's statement_timeout (the same length) stops one that
 * runs on, and postgres.js's cancel of a statement queued on a connection that is still
 * connecting leaves that connection stuck for good (test/faults/database.test.ts found it).
 * So a statement may still run once the database answers again: a write whose caller may
 * be told 503 runs in a transaction. A transaction has one deadline for the whole of it;
 * once past, its next statement fails, and it rolls back instead of committing.
 *
 * Drizzle calls `unsafe()` (then `.values()`) and `begin()`; tagged templates are our own.
 * Everything else passes through untouched.
 */
export function boundedClient(sql: Sql, ms: number, availability: StatementGuard): Sql {
  return bound(sql, () => Date.now() + ms, ms, availability)
}

/**
 * The availability probe, within `ms` on the raw client (it must reach the server while
 * statements are being refused): resolves only when the server answers and takes writes.
 * A standby in recovery, or a server set read-only, answers too, so `select 1` is not
 * enough.
 *
 * Found on such a server, the probe ends every session of this pool there, its own last:
 * the pool then connects again, trying the next host in DATABASE_URL, and finds the
 * primary wherever it is now. postgres.js checks target_session_attrs only when a
 * connection opens; a connection that reached a read-only server (a standby under
 * `read-write`, or a primary set read-only after it opened) would otherwise stay there.
 * The pool's sessions are known by their application_name (db/client.ts).
 */
export async function probe(sql: Sql, ms: number): Promise<void> {
  const [state] = (await settleBy(
    sql`select pg_is_in_recovery() as "inRecovery", current_setting('transaction_read_only') = 'on' as "readOnly"`,
    Date.now() + ms,
    ms,
    null,
  )) as { inRecovery: boolean; readOnly: boolean }[]
  if (state === undefined || (!state.inRecovery && !state.readOnly)) return
  await settleBy(
    // It may run on another of the pool's connections: each end is conditioned on the server
    // it runs on. The others first (the aggregate ends before the outer row is made), then
    // its own.
    sql`select pg_terminate_backend(pg_backend_pid()) from (
          select count(pg_terminate_backend(pid)) from pg_stat_activity
          where application_name = current_setting('application_name') and usename = current_user and pid <> pg_backend_pid()
            and (pg_is_in_recovery() or current_setting('transaction_read_only') = 'on')
        ) as others
        where pg_is_in_recovery() or current_setting('transaction_read_only') = 'on'`,
    Date.now() + ms,
    ms,
    null,
  ).catch(() => {
    // Ending its own session fails the statement (57P01): the point of it.
  })
  throw new DatabaseNotPrimaryError(state)
}

function bound(sql: Sql, deadlineOf: () => number, ms: number, availability: StatementGuard): Sql {
  return new Proxy(sql, {
    apply(target, self, args) {
      return bounded(Reflect.apply(target, self, args) as object, deadlineOf(), ms, availability)
    },
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (property === 'unsafe') {
        return (...args: unknown[]) => bounded((value as (...a: unknown[]) => object).apply(target, args), deadlineOf(), ms, availability)
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          const deadline = deadlineOf()
          const body = args.pop() as (tx: Sql) => unknown
          const inner = (tx: Sql) => body(bound(tx, () => deadline, ms, availability))
          // Not started until awaited, like a statement: the deadline counts from the call.
          const transaction: Work = {
            // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose, started only when awaited like a query
            then: (onValue, onError) =>
              (value as (...a: unknown[]) => Promise<unknown>).apply(target, [...args, inner]).then(onValue, onError),
          }
          return settleBy(transaction, deadline, ms, availability)
        }
      }
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** A pending postgres.js query (lazy: it runs when first awaited) that settles by `deadline`. */
function bounded<Q extends object>(query: Q, deadline: number, ms: number, availability: StatementGuard): Q {
  let settled: Promise<unknown> | null = null
  const proxy: Q = new Proxy(query, {
    get(target, property) {
      if (property === 'then' || property === 'catch' || property === 'finally') {
        settled ??= settleBy(target as Q & Work, deadline, ms, availability)
        const method = Reflect.get(settled, property, settled) as (...a: unknown[]) => unknown
        return method.bind(settled)
      }
      const value = Reflect.get(target, property, target) as unknown
      if (typeof value !== 'function') return value
      // values(), raw() and the like return the query itself: keep the bound one.
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args)
        return result === target ? proxy : result
      }
    },
  })
  return proxy
}

/**
 * `COPY ... FROM STDIN` of `text` (the statement's whole input, in COPY's text format), in
 * a transaction of its own on a connection reserved for it, within the deadline like any
 * statement.
 *
 * postgres.js answers a COPY with a stream, and loses an error the server sends after the
 * input's end (a unique violation is found only then): the stream never finishes, and the
 * error is reported nowhere (porsager/postgres#1173, unfixed in 3.4.9). So the stream's
 * `finish` is not trusted: once the input's end is sent, one more statement runs in the same
 * transaction, and it fails (25P02, in_failed_sql_transaction) exactly when the COPY did;
 * that error is thrown and the server's own is lost. The messages are pipelined: BEGIN
 * with the COPY, then the input, its end, the check and COMMIT, two round trips in all
 * (a transaction awaited statement by statement took five, a fifth of the throughput).
 */
export function boundedCopy(sql: Sql, ms: number, availability: StatementGuard): (statement: string, text: string) => Promise<void> {
  return (statement, text) => {
    const work: Work = {
      // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose, started only when awaited like a query
      then: (onValue, onError) => copyInTransaction(sql, statement, text).then(onValue, onError),
    }
    return settleBy(work, Date.now() + ms, ms, availability) as Promise<void>
  }
}

async function copyInTransaction(sql: Sql, statement: string, text: string): Promise<void> {
  const connection = await sql.reserve()
  try {
    // Queries are sent when first awaited; execute() sends them now, in this order.
    const begin = connection`begin`.execute()
    const stream = connection.unsafe(statement).writable()
    await begin
    await endInput(await stream, text)
    const check = connection`select 1`.execute()
    const commit = connection`commit`.execute()
    try {
      await check
    } finally {
      // Ends the transaction either way: committed, or (after a failed COPY) rolled back.
      await commit
    }
  } finally {
    connection.release()
  }
}

/**
 * Writes `text` and the end of the input; resolves once the end is handed to the socket
 * (postgres.js's `final`), not when the server has answered: the statement after it is
 * only accepted once the COPY stream is closed on the client side. A refusal the server
 * sends while the input is still being written rejects with its error.
 */
function endInput(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const final = stream._final
    if (final === undefined) return reject(new Error('a COPY stream without _final: postgres.js has changed'))
    stream._final = function (this: Writable, callback) {
      final.call(this, callback)
      resolve()
    }
    stream.once('error', reject)
    stream.end(text)
  })
}

/** What settleBy waits on: a lazy query, or a transaction not begun until asked. */
interface Work {
  then(onValue: (value: unknown) => unknown, onError: (error: unknown) => unknown): unknown
}

/**
 * `work` (started by its first `then`) settled by `deadline`, or sooner if the database is
 * found down. While the database is suspect (a probe under way), `work` waits for the
 * probe's answer before it starts, within the same deadline.
 */
function settleBy(work: Work, deadline: number, ms: number, availability: StatementGuard | null): Promise<unknown> {
  return new Promise((resolve, reject) => {
    // When the statement was asked for: settleBy runs as it is.
    const startedAt = Date.now()
    const fail = (error: unknown) => {
      availability?.failed(error, startedAt)
      reject(error)
    }
    try {
      availability?.admit()
    } catch (error) {
      return reject(error)
    }
    const left = deadline - Date.now()
    if (left <= 0) return fail(new DatabaseDeadlineError(ms))
    let done = false
    let stopWatching = () => {}
    const finish = (): boolean => {
      if (done) return false
      done = true
      clearTimeout(timer)
      stopWatching()
      return true
    }
    const timer = setTimeout(() => finish() && fail(new DatabaseDeadlineError(ms)), left)
    const start = () => {
      if (done) return
      try {
        availability?.admit()
      } catch (error) {
        finish()
        return reject(error)
      }
      stopWatching = availability?.abortOnDown(() => finish() && reject(new DatabaseDownError())) ?? (() => {})
      work.then(
        (value) => finish() && resolve(value),
        (error: unknown) => finish() && fail(error),
      )
    }
    const suspicion = availability?.suspicion() ?? null
    if (suspicion === null) start()
    else void suspicion.then(start)
  })
}
