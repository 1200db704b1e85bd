import { sql } from 'drizzle-orm'
import { queryRows, type Db } from '../../db/client.ts'
import { signedHeaders } from './signature.ts'
import type { UrlGuard } from './url-guard.ts'

/** The waits before each retry (docs/webhooks.md, "Retries"): then the delivery has failed. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const
/** An endpoint whose deliveries have failed for this long, without a success between, is disabled. */
export const DISABLE_AFTER_MS = 5 * 86_400_000

export interface WebhookDeliveryOptions {
  guard: UrlGuard
  retryDelaysMs?: readonly number[]
  /** A receiver answers within this, or the attempt fails (15 s). */
  timeoutMs?: number
  /** Deliveries claimed per run, and sent at once: the memory and sockets a run may hold. */
  batch?: number
  concurrency?: number
  disableAfterMs?: number
  /** Stands in for the network (tests); the global fetch by default. */
  fetch?: typeof fetch
  now?: () => number
}

/** What one run did, for tests and metrics. */
export interface DeliveryRun {
  claimed: number
  delivered: number
  failed: number
}

interface Claimed {
  id: string
  endpoint_id: string
  event_id: string
  attempts: number
  leased_until: string
  url: string
  secret: string
  type: string
  payload: unknown
  created_at: string
  failing_since: string | null
}

type Outcome = { ok: true; status: number } | { ok: false; status: number | null; error: string }

/**
 * Sends the deliveries the outbox holds (src/webhooks/outbox.ts), off the request path, on
 * the app's scheduler. Each run claims a batch of due deliveries with `FOR UPDATE SKIP
 * LOCKED` and a lease, so two instances never send one delivery at once and a dead
 * instance's claims are taken over when their lease ends; sends them, at most `concurrency`
 * at a time, each within `timeoutMs`; and records each outcome under its own lease only. A
 * receiver that hangs holds one of the run's slots until the timeout, and nothing else.
 */
export function createWebhookDelivery(db: Db, options: WebhookDeliveryOptions) {
  const retries = options.retryDelaysMs ?? RETRY_DELAYS_MS
  const timeoutMs = options.timeoutMs ?? 15_000
  const batch = options.batch ?? 50
  const concurrency = options.concurrency ?? 8
  const disableAfterMs = options.disableAfterMs ?? DISABLE_AFTER_MS
  const send = options.fetch ?? fetch
  // The lease outlives the longest attempt (the URL check's DNS and the receiver's timeout) with room to record it.
  const leaseMs = timeoutMs + 45_000

  async function claim(): Promise<Claimed[]> {
    return queryRows<Claimed>(
      db,
      sql`
        with due as (
          select d.id from webhook_deliveries d
          join webhook_endpoints e on e.id = d.endpoint_id and e.disabled_at is null
          where d.status = 'pending' and d.next_attempt_at <= now() and (d.leased_until is null or d.leased_until < now())
          order by d.next_attempt_at, d.created_at
          limit ${batch}
          for update of d skip locked
        ),
        leased as (
          update webhook_deliveries d set leased_until = now() + ${leaseMs} * interval '1 millisecond'
          from due where d.id = due.id
          returning d.id, d.endpoint_id, d.event_id, d.attempts, d.leased_until
        )
        select l.id, l.endpoint_id, l.event_id, l.attempts, l.leased_until::text as leased_until,
               e.url, e.secret, e.failing_since::text as failing_since,
               v.type, v.payload, v.created_at::text as created_at
        from leased l
        join webhook_endpoints e on e.id = l.endpoint_id
        join webhook_events v on v.id = l.event_id
        order by v.created_at, l.id`,
    )
  }

  async function attempt(delivery: Claimed): Promise<Outcome> {
    const checked = await options.guard(delivery.url)
    if (!checked.ok) return { ok: false, status: null, error: `refused: ${checked.reason}` }
    const body = JSON.stringify({ type: delivery.type, timestamp: new Date(delivery.created_at).toISOString(), data: delivery.payload })
    const headers = signedHeaders(delivery.secret, delivery.event_id, Math.floor((options.now?.() ?? Date.now()) / 1000), body)
    try {
      const response = await send(checked.url, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      })
      // The answer's body is never read: only its status counts.
      await response.body?.cancel().catch(() => {})
      if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status }
      const redirect = response.status >= 300 && response.status < 400
      return { ok: false, status: response.status, error: redirect ? 'redirects are not followed' : `answered ${response.status}` }
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
      return { ok: false, status: null, error: timedOut ? `no answer within ${timeoutMs / 1000} s` : 'could not connect' }
    }
  }

  async function record(delivery: Claimed, outcome: Outcome): Promise<void> {
    await db.transaction(async (tx) => {
      const lease = sql`id = ${delivery.id}::uuid and leased_until = ${delivery.leased_until}::timestamptz`
      if (outcome.ok) {
        const done = await queryRows(
          tx,
          sql`
          update webhook_deliveries set status = 'delivered', attempts = attempts + 1, last_status = ${outcome.status},
            last_error = null, last_attempt_at = now(), delivered_at = now(), leased_until = null
          where ${lease} returning id`,
        )
        if (done.length > 0)
          await tx.execute(sql`update webhook_endpoints set failing_since = null where id = ${delivery.endpoint_id}::uuid`)
        return
      }
      const attempts = delivery.attempts + 1
      const last = attempts > retries.length
      const failed = await queryRows(
        tx,
        sql`
        update webhook_deliveries set attempts = ${attempts}, last_status = ${outcome.status}, last_error = ${outcome.error},
          last_attempt_at = now(), leased_until = null,
          status = ${last ? 'failed' : 'pending'},
          next_attempt_at = ${last ? sql`next_attempt_at` : sql`now() + ${retries[attempts - 1]!} * interval '1 millisecond'`}
        where ${lease} returning id`,
      )
      if (failed.length === 0) return
      // The endpoint fails from its first failure without a success since; after long enough it is disabled.
      await tx.execute(sql`
        update webhook_endpoints set
          failing_since = coalesce(failing_since, now()),
          disabled_at = case when coalesce(failing_since, now()) <= now() - ${disableAfterMs} * interval '1 millisecond' then now() else disabled_at end
        where id = ${delivery.endpoint_id}::uuid`)
    })
  }

  return {
    /** One run: claims what is due and sends it. */
    async run(): Promise<DeliveryRun> {
      // Most runs find nothing due: a read says so, and the claim (an UPDATE) is sent only
      // when there is something to claim, so an idle service writes nothing every second.
      const [due] = await queryRows(db, sql`select 1 from webhook_deliveries where status = 'pending' and next_attempt_at <= now() limit 1`)
      if (!due) return { claimed: 0, delivered: 0, failed: 0 }
      const claimed = await claim()
      const result: DeliveryRun = { claimed: claimed.length, delivered: 0, failed: 0 }
      let next = 0
      async function worker(): Promise<void> {
        while (next < claimed.length) {
          const delivery = claimed[next++]!
          const outcome = await attempt(delivery)
          await record(delivery, outcome)
          if (outcome.ok) result.delivered++
          else result.failed++
        }
      }
      await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, worker))
      return result
    },
  }
}

export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>
