import { and, eq, sql } from 'drizzle-orm'
import { queryRows, type Db } from '../../db/client.ts'
import { isDatabaseUnavailable } from '../../db/faults.ts'
import { analyticsErasures } from '../../db/schema/index.ts'
import { recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { ApiError } from '../errors.ts'
import { isUuid } from '../shared/uuid.ts'
import { strictBody } from '../shared/validation.ts'
import { t } from 'elysia'
import { Chars } from '../shared/characters.ts'

// Erasing a person's events (contract section 16). A request is a row of
// analytics_erasures: from its insert on, reads hide the events it names (./read.ts); a
// worker in this process deletes them in the background, in bounded batches, then marks it
// done and writes the audit entry, with the count and never the identifier, in the same
// transaction (the count is known only then). Identifiers are cleared when it is done.

/** Who an erasure is about: a `personId`, an `anonymousId`, or both (either matches). */
export interface ErasureTarget {
  personId?: string
  anonymousId?: string
}

export type ErasureRow = typeof analyticsErasures.$inferSelect

const identifier = (what: string) =>
  t.Optional(Chars({ minLength: 1, maxLength: 200, description: `${what}, exactly as events carried it; 1-200 characters.` }))

/** The request's body, for the API and the admin API alike: one identifier or both. */
export const ErasureBody = t.Object({
  personId: identifier('The `personId` whose events to erase'),
  anonymousId: identifier('The `anonymousId` whose events to erase'),
})

const erasureBody = strictBody(ErasureBody)

/** Throws 400 naming the field at fault, or saying that neither identifier was sent. */
export function checkErasureBody(request: { body: unknown }): void {
  erasureBody.check(request)
  const body = request.body as ErasureTarget
  if (body.personId === undefined && body.anonymousId === undefined) {
    throw new ApiError('invalid_request', 'Invalid body: send "personId", "anonymousId" or both, each 1-200 characters.')
  }
}

export const ErasureBodySchema = erasureBody.schema

export const ErasureCreated = t.Object({
  id: t.String({ description: 'Ask GET .../erasures/{id} how it goes.' }),
  status: t.Literal('pending'),
})

export const ErasureRecordSchema = t.Object({
  id: t.String(),
  status: t.Union([t.Literal('pending'), t.Literal('done')], {
    description: '"pending": reads already hide the events, storage is losing them; "done": they are gone.',
  }),
  requestedAt: t.String({ format: 'date-time' }),
  completedAt: t.Nullable(t.String({ format: 'date-time' })),
  deleted: t.Integer({ description: 'Events deleted so far.' }),
})

/** The request on the wire: never the identifiers. */
export function toErasureRecord(row: ErasureRow) {
  return {
    id: row.id,
    status: row.status,
    requestedAt: row.requestedAt.toISOString(),
    completedAt: row.completedAt?.toISOString() ?? null,
    deleted: row.deleted,
  }
}

export type ErasureRecord = ReturnType<typeof toErasureRecord>

export interface ErasureOptions {
  /** Rows one DELETE removes at most (default 5000). */
  batchRows?: number
  /** The span of `occurred_at` one DELETE looks in (default 7 days): every statement stays small. */
  windowMs?: number
  /**
   * How long after a request its events may still arrive (received before it, committed after
   * the worker's first pass: a batch of the group commit in flight). The worker passes again
   * once this has passed since the request (default 15 s).
   */
  settleMs?: number
  /** Pause before retrying after a failure, doubled each time up to a minute (default 5 s). */
  retryDelayMs?: number
  /** How often pending requests are looked for (a request another instance left behind; default 60 s). */
  sweepMs?: number
  /** How long an instance holds a request it works on before another may take it (default 2 min). */
  leaseMs?: number
  /** A failure other than the database being unavailable (that one is retried silently). */
  onError?: (error: unknown) => void
}

export interface Erasures {
  /** Records the request (reads hide the events at once) and starts the deletion. */
  request(businessId: string, target: ErasureTarget, by: ChangeAuthor & { keyId?: string }): Promise<ErasureRecord>
  /** The business's request; 404 for an unknown id or another business's. */
  get(businessId: string, id: string): Promise<ErasureRecord>
  /** Picks up pending requests now and every `sweepMs` (start-up). */
  start(): void
  /** Resolves once no deletion is running (tests wait for it before reading storage). */
  idle(): Promise<void>
  /** Stops after the statement running now. */
  close(): Promise<void>
}

/**
 * `db` answers requests; `background` (its own pool and statement timeout on PostgreSQL,
 * db/client.ts) runs the deletion, so a slow one never holds a request's connection and its
 * failures never mark the database unavailable.
 */
export function createErasures(db: Db, background: Db, options: ErasureOptions = {}): Erasures {
  const batchRows = options.batchRows ?? 5_000
  const windowMs = options.windowMs ?? 7 * 86_400_000
  const settleMs = options.settleMs ?? 15_000
  const firstDelay = options.retryDelayMs ?? 5_000
  const leaseMs = options.leaseMs ?? 120_000
  let delay = firstDelay
  let running: Promise<void> | null = null
  let again = false
  let closed = false
  let retry: ReturnType<typeof setTimeout> | undefined
  let sweep: ReturnType<typeof setInterval> | undefined

  function kick(): void {
    if (closed) return
    if (running) {
      again = true
      return
    }
    running = drain()
      .then(() => {
        delay = firstDelay
      })
      .catch((error: unknown) => {
        if (!isDatabaseUnavailable(error)) options.onError?.(error)
        clearTimeout(retry)
        retry = setTimeout(kick, delay)
        retry.unref?.()
        delay = Math.min(delay * 2, 60_000)
      })
      .finally(() => {
        running = null
        if (again) {
          again = false
          kick()
        }
      })
  }

  async function drain(): Promise<void> {
    for (;;) {
      if (closed) return
      const job = await claim()
      if (!job) return
      await erase(job)
    }
  }

  /** The oldest pending request no instance holds, taken for `leaseMs`. */
  async function claim(): Promise<ErasureRow | null> {
    const e = analyticsErasures
    const [row] = await background
      .update(e)
      .set({ claimedUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
      .where(
        sql`${e.id} = (select ${e.id} from ${e} where ${e.status} = 'pending' and (${e.claimedUntil} is null or ${e.claimedUntil} < now())
          order by ${e.requestedAt} limit 1 for update skip locked)`,
      )
      .returning()
    return row ?? null
  }

  async function erase(job: ErasureRow): Promise<void> {
    await pass(job)
    if (closed) return
    const settled = job.requestedAt.getTime() + settleMs
    if (Date.now() < settled) {
      // Held until then, by no one: the next claim after it passes again, then finishes.
      await background
        .update(analyticsErasures)
        .set({ claimedUntil: new Date(settled) })
        .where(eq(analyticsErasures.id, job.id))
      const later = setTimeout(kick, settled - Date.now() + 50)
      later.unref?.()
      return
    }
    await background.transaction(async (tx) => {
      const [done] = await tx
        .update(analyticsErasures)
        .set({ status: 'done', completedAt: sql`now()`, personId: null, anonymousId: null, claimedUntil: null })
        .where(and(eq(analyticsErasures.id, job.id), eq(analyticsErasures.status, 'pending')))
        .returning()
      if (!done) return // another instance finished it
      await recordChange(tx, {
        businessId: done.businessId,
        action: 'analytics.erased',
        by: { actor: done.requestedBy as ChangeAuthor['actor'], requestId: done.requestId ?? undefined },
        keyId: done.keyId ?? undefined,
        changes: { erasure: { from: null, to: done.id }, deleted: { from: null, to: done.deleted } },
      })
    })
  }

  /**
   * Deletes the request's events in every span of `occurred_at` the business has events in,
   * `batchRows` at a time, each statement also adding its count to the request and renewing
   * its lease. Rows are picked by (business_id, id, occurred_at), which locates a row on a
   * table partitioned by time too (a ctid is only unique within one partition).
   */
  async function pass(job: ErasureRow): Promise<void> {
    const [span] = await queryRows<{ first: string | null; last: string | null }>(
      background,
      sql`select min(occurred_at) as first, max(occurred_at) as last from analytics_events where business_id = ${job.businessId}`,
    )
    if (!span?.first || !span.last) return
    const last = new Date(span.last).getTime()
    for (let from = new Date(span.first).getTime(); from <= last; from += windowMs) {
      for (;;) {
        if (closed) return
        const [result] = await queryRows<{ n: number }>(
          background,
          sql`with victims as (
                select business_id, id, occurred_at from analytics_events
                where business_id = ${job.businessId}
                  and occurred_at >= ${new Date(from).toISOString()}::timestamptz
                  and occurred_at < ${new Date(from + windowMs).toISOString()}::timestamptz
                  and received_at < ${job.requestedAt.toISOString()}::timestamptz
                  and (person_id = ${job.personId}::text or anonymous_id = ${job.anonymousId}::text)
                limit ${batchRows}
              ), gone as (
                delete from analytics_events e using victims v
                where e.business_id = v.business_id and e.id = v.id and e.occurred_at = v.occurred_at
                  -- The span again, as constants: the planner then reads only its partitions.
                  and e.business_id = ${job.businessId}
                  and e.occurred_at >= ${new Date(from).toISOString()}::timestamptz
                  and e.occurred_at < ${new Date(from + windowMs).toISOString()}::timestamptz
                returning 1
              )
              update analytics_erasures
                set deleted = deleted + (select count(*) from gone),
                    claimed_until = now() + make_interval(secs => ${leaseMs / 1000})
                where id = ${job.id}
                returning (select count(*) from gone)::int as n`,
        )
        if (!result || result.n < batchRows) break
      }
    }
  }

  return {
    async request(businessId, target, by) {
      const [row] = await db
        .insert(analyticsErasures)
        .values({
          businessId,
          personId: target.personId ?? null,
          anonymousId: target.anonymousId ?? null,
          requestedBy: by.actor,
          keyId: by.keyId ?? null,
          requestId: by.requestId ?? null,
        })
        .returning()
      kick()
      return toErasureRecord(row!)
    },
    async get(businessId, id) {
      const [row] = isUuid(id)
        ? await db
            .select()
            .from(analyticsErasures)
            .where(and(eq(analyticsErasures.id, id), eq(analyticsErasures.businessId, businessId)))
        : []
      if (!row) throw new ApiError('not_found', `No erasure request with id ${id}.`)
      return toErasureRecord(row)
    },
    start() {
      if (closed || sweep) return
      sweep = setInterval(kick, options.sweepMs ?? 60_000)
      sweep.unref?.()
      kick()
    },
    async idle() {
      while (running) await running
    },
    async close() {
      closed = true
      clearTimeout(retry)
      clearInterval(sweep)
      await running
    },
  }
}
