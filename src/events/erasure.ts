import { and, eq, inArray, sql } from 'drizzle-orm'
import { queryRows, type Database, type Db } from '../../db/client.ts'
import type { Scheduler } from '../background/scheduler.ts'
import { analyticsErasures } from '../../db/schema/index.ts'
import { recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { recordWebhookEvent } from '../webhooks/outbox.ts'
import { ApiError } from '../errors.ts'
import { isUuid } from '../shared/uuid.ts'
import { strictBody } from '../shared/validation.ts'
import { t } from 'elysia'
import { Chars } from '../shared/characters.ts'

// Erasing a person's events (docs/api.md, "Erasure"). A request is a row of
// analytics_erasures: from its insert on, reads hide the events it names (./read.ts); a
// worker in this process deletes them in the background, in bounded batches, then writes
// the audit entry and the webhook event, with the count and never the identifier (the count
// is known only then), and marks it done. Identifiers are cleared when it is done.
// A business has at most MAX_PENDING_ERASURES pending (more answer 429), the worker serves
// businesses in turn, and the event maintenance deletes finished requests after
// DONE_ERASURES_KEPT_MS (docs/decisions.md, "Fair erasures, cheap to read past").

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
   * How long after a request its events may still arrive (received before it, committed
   * later: a batch of the group commit in flight). A request is worked once this has passed
   * since it was made, so one pass finds every event it names (default 15 s).
   */
  settleMs?: number
  /** Pause before retrying after a failure, doubled each time up to `sweepMs` (default 5 s). */
  retryDelayMs?: number
  /** How often pending requests are looked for at the latest (at start-up, then a request another instance left behind; default 60 s). */
  sweepMs?: number
  /** How long an instance holds the requests it works on before another may take them (default 2 min). */
  leaseMs?: number
  /** Pending requests a business may have; one more is answered 429 (default MAX_PENDING_ERASURES). */
  maxPending?: number
  /** A business's pending requests one pass works together, in one scan of its events (default 100). */
  jobsPerPass?: number
}

/** Pending erasure requests a business may have at once (docs/api.md, "Erasure"). */
export const MAX_PENDING_ERASURES = 100
/** A finished request answers GET for 30 days, then its row is deleted (docs/api.md, "Erasure"). */
export const DONE_ERASURES_KEPT_MS = 30 * 86_400_000

/**
 * The finished requests past DONE_ERASURES_KEPT_MS at `now`: the event maintenance deletes
 * them (./maintenance.ts) with the other tables past their retention. A pending request has
 * no `completed_at`, so it is never among them.
 */
export function expiredErasures(now: number) {
  return { table: 'analytics_erasures', column: 'completed_at', before: new Date(now - DONE_ERASURES_KEPT_MS), byKey: true } as const
}
/** Retry-After of the 429 at the cap: about one pass of the worker over a business. */
const FULL_RETRY_SECONDS = 30

export interface Erasures {
  /** Records the request (reads hide the events at once) and starts the deletion; 429 past the business's cap. */
  request(businessId: string, target: ErasureTarget, by: ChangeAuthor & { keyId?: string }): Promise<ErasureRecord>
  /** The business's request; 404 for an unknown id or another business's. */
  get(businessId: string, id: string): Promise<ErasureRecord>
  /** Resolves once no deletion is running (tests wait for it before reading storage). */
  idle(): Promise<void>
  /** Stops after the statement running now. */
  close(): Promise<void>
}

/** One pass's requests, as the deleting statement reads them. */
interface Job {
  id: string
  person_id: string | null
  anonymous_id: string | null
  requested_at: string
}

/** Where erasures live and whom a finished one is told to. */
export interface ErasureStores {
  /**
   * The event store's database: its pool answers requests; its background pool (its own
   * pool and statement timeout on PostgreSQL, db/client.ts) runs the deletion, so a slow one
   * never holds a request's connection and its failures never mark the database unavailable.
   */
  events: Pick<Database, 'db' | 'background'>
  /**
   * The service's background pool: a finished request's audit entry and webhook event. The
   * same database as the events' unless EVENTS_DATABASE_URL is set (docs/scaling.md, "A
   * database for events").
   */
  service: Db
}

/**
 * Fairness (docs/decisions.md, "Fair erasures, cheap to read past"): each pass takes one
 * business, the one served least recently (its newest finished request is the oldest, or
 * it has none), and up to `jobsPerPass` of its oldest pending requests, deleting the union
 * of their events in one scan of that business's events. A business with thousands pending
 * thus delays another's request by one pass at most.
 */
export function createErasures(stores: ErasureStores, scheduler: Scheduler, options: ErasureOptions = {}): Erasures {
  const { db, background } = stores.events
  const batchRows = options.batchRows ?? 5_000
  const windowMs = options.windowMs ?? 7 * 86_400_000
  const settleMs = options.settleMs ?? 15_000
  const leaseMs = options.leaseMs ?? 120_000
  const sweepMs = options.sweepMs ?? 60_000
  const maxPending = options.maxPending ?? MAX_PENDING_ERASURES
  const jobsPerPass = options.jobsPerPass ?? 100
  let closed = false
  // Pending requests are looked for every `sweepMs`, and at once after a new request; a
  // failed pass is tried again after `retryDelayMs`, doubled up to `sweepMs`.
  const worker = scheduler.schedule('erasures', sweepMs, drain, { retryMs: options.retryDelayMs ?? 5_000 })

  async function drain(): Promise<void> {
    for (;;) {
      if (closed) return
      const jobs = await claim()
      if (jobs.length === 0) return wakeWhenDue()
      await erase(jobs)
      // A turn of the event loop between passes: on the embedded database (one connection),
      // requests waiting for it get their statements in before the next pass's.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Nothing to take now: wake when the next pending request settles or its holder's lease
   * ends (at most `sweepMs` from now). One timer, whatever the number of requests.
   */
  async function wakeWhenDue(): Promise<void> {
    const x = analyticsErasures
    const [next] = await queryRows<{ at: string | null }>(
      background,
      sql`select min(greatest(${x.requestedAt} + make_interval(secs => ${settleMs / 1000}), coalesce(${x.claimedUntil}, '-infinity'))) as at
          from ${x} where ${x.status} = 'pending'`,
    )
    if (!next?.at || closed) return
    worker.runSoon(Math.min(Math.max(new Date(next.at).getTime() - Date.now() + 50, 50), sweepMs))
  }

  /**
   * The next pass's requests, taken for `leaseMs`: of the business served least recently
   * among those with a settled request no instance holds, its oldest such requests.
   */
  async function claim(): Promise<ErasureRow[]> {
    const x = analyticsErasures
    // Written with an alias at each level: a bare table name inside would refer to the level above.
    const due = (alias: string) =>
      sql.raw(`${alias}.status = 'pending' and (${alias}.claimed_until is null or ${alias}.claimed_until < now())
        and ${alias}.requested_at <= now() - make_interval(secs => ${Number(settleMs) / 1000})`)
    // Which business: the one question asked across the queue (test/db/event-store-rules.test.ts says why a sharded store answers it).
    const [next] = await queryRows<{ business_id: string }>(
      background,
      sql`select p.business_id from analytics_erasures p where ${due('p')}
          group by p.business_id
          order by (select max(d.completed_at) from analytics_erasures d where d.business_id = p.business_id and d.status = 'done') asc nulls first,
            min(p.requested_at)
          limit 1`,
    )
    if (next === undefined) return []
    // Its oldest due requests, on its shard; those another instance took meanwhile are skipped.
    return background
      .update(x)
      .set({ claimedUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
      .where(
        and(
          eq(x.businessId, next.business_id),
          sql`${x.id} in (
            select j.id from analytics_erasures j where ${due('j')} and j.business_id = ${next.business_id}
            order by j.requested_at limit ${jobsPerPass} for update skip locked)`,
        ),
      )
      .returning()
  }

  /**
   * One scan deletes every job's events; then each finished request is told (its audit entry
   * and webhook event, in one transaction on the service's database, once: the event's
   * dedupe key) and marked done. Two databases share no transaction, so the telling comes
   * first: a stop between the two leaves the request pending, and the next pass, which finds
   * nothing more to delete, tells nobody twice and marks it done.
   */
  async function erase(jobs: ErasureRow[]): Promise<void> {
    const completed = await pass(jobs)
    if (!completed || closed) return
    const x = analyticsErasures
    // One pass serves one business: each statement names it, as a sharded store needs (docs/scaling.md).
    const ofThePass = and(
      eq(x.businessId, jobs[0]!.businessId),
      inArray(
        x.id,
        jobs.map((job) => job.id),
      ),
      eq(x.status, 'pending'),
    )
    // As the pass left them (their counts); one that another instance finished meanwhile is not here.
    const finished = await background.select().from(x).where(ofThePass)
    if (finished.length === 0) return
    const completedAt = new Date()
    await stores.service.transaction(async (tx) => {
      for (const row of finished) {
        const told = await recordWebhookEvent(tx, {
          businessId: row.businessId,
          type: 'erasure.completed',
          payload: {
            erasureId: row.id,
            deleted: row.deleted,
            requestedAt: row.requestedAt.toISOString(),
            completedAt: completedAt.toISOString(),
          },
          dedupeKey: `erasure.completed:${row.id}`,
        })
        if (told === null) continue
        await recordChange(tx, {
          businessId: row.businessId,
          action: 'analytics.erased',
          by: { actor: row.requestedBy as ChangeAuthor['actor'], requestId: row.requestId ?? undefined },
          keyId: row.keyId ?? undefined,
          changes: { erasure: { from: null, to: row.id }, deleted: { from: null, to: row.deleted } },
        })
      }
    })
    await background.update(x).set({ status: 'done', completedAt, personId: null, anonymousId: null, claimedUntil: null }).where(ofThePass)
  }

  /**
   * Deletes the jobs' events (one business's) in every span of `occurred_at` the business has
   * events in, `batchRows` at a time; each statement adds to each job the count of deleted
   * events it names and renews the lease. Rows are picked by (business_id, id, occurred_at),
   * which locates a row on a table partitioned by time (a ctid is only unique within one
   * partition). Answers false when closed midway.
   */
  async function pass(jobs: ErasureRow[]): Promise<boolean> {
    const businessId = jobs[0]!.businessId
    const wanted: Job[] = jobs.map((job) => ({
      id: job.id,
      person_id: job.personId,
      anonymous_id: job.anonymousId,
      requested_at: job.requestedAt.toISOString(),
    }))
    const [span] = await queryRows<{ first: string | null; last: string | null }>(
      background,
      sql`select min(occurred_at) as first, max(occurred_at) as last from analytics_events where business_id = ${businessId}`,
    )
    if (!span?.first || !span.last) return true
    const last = new Date(span.last).getTime()
    // The jobs as a relation, and the identifiers as arrays: the scan tests each event against a hashed set.
    const persons = wanted.flatMap((job) => (job.person_id === null ? [] : [job.person_id]))
    const visitors = wanted.flatMap((job) => (job.anonymous_id === null ? [] : [job.anonymous_id]))
    for (let from = new Date(span.first).getTime(); from <= last; from += windowMs) {
      const lower = new Date(from).toISOString()
      const upper = new Date(from + windowMs).toISOString()
      for (;;) {
        if (closed) return false
        const [result] = await queryRows<{ n: number }>(
          background,
          sql`with jobs as (
                select * from jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb)
                  as j(id uuid, person_id text, anonymous_id text, requested_at timestamptz)
              ), victims as (
                select e.business_id, e.id, e.occurred_at from analytics_events e
                where e.business_id = ${businessId}
                  and e.occurred_at >= ${lower}::timestamptz and e.occurred_at < ${upper}::timestamptz
                  and (e.person_id = any(${sql.param(persons)}::text[]) or e.anonymous_id = any(${sql.param(visitors)}::text[]))
                  and exists (select 1 from jobs j where e.received_at < j.requested_at
                    and (e.person_id = j.person_id or e.anonymous_id = j.anonymous_id))
                limit ${batchRows}
              ), gone as (
                delete from analytics_events e using victims v
                where e.business_id = v.business_id and e.id = v.id and e.occurred_at = v.occurred_at
                  -- The span again, as constants: the planner then reads only its partitions.
                  and e.business_id = ${businessId}
                  and e.occurred_at >= ${lower}::timestamptz and e.occurred_at < ${upper}::timestamptz
                returning e.person_id, e.anonymous_id, e.received_at
              ), counted as (
                select j.id, count(g.received_at) as n from jobs j
                  left join gone g on g.received_at < j.requested_at and (g.person_id = j.person_id or g.anonymous_id = j.anonymous_id)
                group by j.id
              )
              update analytics_erasures x
                set deleted = x.deleted + c.n,
                    claimed_until = now() + make_interval(secs => ${leaseMs / 1000})
                from counted c
                where x.business_id = ${businessId} and x.id = c.id
                returning (select count(*) from gone)::int as n`,
        )
        if (!result || result.n < batchRows) break
      }
    }
    return true
  }

  /** Refuses a request past the cap; the caller holds the business's request lock. */
  async function assertRoom(tx: Db, businessId: string): Promise<void> {
    const x = analyticsErasures
    const [row] = await queryRows<{ n: number }>(
      tx,
      sql`select count(*)::int as n from ${x} where ${x.businessId} = ${businessId} and ${x.status} = 'pending'`,
    )
    if ((row?.n ?? 0) >= maxPending) {
      throw new ApiError(
        'rate_limited',
        `This business has ${maxPending} erasure requests pending, the most it may have. Retry after ${FULL_RETRY_SECONDS} s (the Retry-After header): each finished request makes room.`,
        { headers: { 'retry-after': String(FULL_RETRY_SECONDS) } },
      )
    }
  }

  return {
    async request(businessId, target, by) {
      const row = await db.transaction(async (tx) => {
        // One request of the business at a time counts and inserts: two never both take the last place.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext('keygate:erasure-requests'), hashtext(${businessId}))`)
        await assertRoom(tx, businessId)
        const [inserted] = await tx
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
        return inserted!
      })
      worker.runSoon()
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
    idle: () => worker.idle(),
    async close() {
      closed = true
      await worker.idle()
    },
  }
}
