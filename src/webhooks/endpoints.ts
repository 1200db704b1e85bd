import { and, count, desc, eq, isNotNull, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { webhookDeliveries, webhookEndpoints, webhookEvents, type WebhookEventType } from '../../db/schema/index.ts'
import { changedFields, recordChange, type ChangeAuthor } from '../audit/trail.ts'
import { ApiError } from '../errors.ts'
import { MAX_ENDPOINTS, type DeliveryRecord, type EndpointRecord } from './model.ts'
import { recordWebhookEvent } from './outbox.ts'
import { newSigningSecret } from './signature.ts'
import type { UrlGuard } from './url-guard.ts'

type EndpointRow = typeof webhookEndpoints.$inferSelect

export function toEndpointRecord(row: EndpointRow): EndpointRecord {
  return {
    id: row.id,
    businessId: row.businessId,
    url: row.url,
    description: row.description,
    events: row.events,
    enabled: row.disabledAt === null,
    disabledAt: row.disabledAt?.toISOString() ?? null,
    failingSince: row.failingSince?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

/** The fields of an endpoint a change can touch, as the trail shows them (never the secret). */
const AUDITED = ['url', 'events', 'description', 'enabled'] as const satisfies readonly (keyof EndpointRecord)[]

/** An endpoint disabled after failing: the dashboard's banner names it. */
export interface DisabledEndpoint {
  id: string
  url: string
}

/** The business's endpoints disabled after failing (not those an owner turned off), for the banner on every page. */
export async function disabledByFailure(db: Db, businessId: string): Promise<DisabledEndpoint[]> {
  return db
    .select({ id: webhookEndpoints.id, url: webhookEndpoints.url })
    .from(webhookEndpoints)
    .where(
      and(eq(webhookEndpoints.businessId, businessId), isNotNull(webhookEndpoints.disabledAt), isNotNull(webhookEndpoints.failingSince)),
    )
    .orderBy(webhookEndpoints.createdAt)
    .limit(MAX_ENDPOINTS)
}

/** Deliveries a page lists. */
const DELIVERIES_SHOWN = 50

export interface EndpointInput {
  url: string
  events: readonly WebhookEventType[]
  description?: string | null
}

export interface EndpointChangesInput {
  url?: string
  events?: readonly WebhookEventType[]
  description?: string | null
  enabled?: boolean
}

/**
 * A business's webhook endpoints, for the admin API, the dashboard and the CLI
 * (docs/webhooks.md): each change is checked (the URL by the guard, against the addresses
 * webhooks may not reach), written with its audit entry in one transaction, and every query
 * names the business.
 */
export function createWebhookEndpoints(db: Db, guard: UrlGuard) {
  async function checkedUrl(url: string): Promise<string> {
    const verdict = await guard(url)
    if (!verdict.ok) throw new ApiError('invalid_request', `url: ${verdict.reason}`, { field: 'url' })
    return verdict.url.href
  }

  async function find(businessId: string, endpointId: string, on: Db = db): Promise<EndpointRow> {
    const [row] = await on
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.businessId, businessId)))
    if (!row) throw new ApiError('not_found', `No webhook endpoint with id ${endpointId} in this business.`)
    return row
  }

  return {
    async list(businessId: string): Promise<EndpointRecord[]> {
      const rows = await db
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.businessId, businessId))
        .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
      return rows.map(toEndpointRecord)
    },

    async get(businessId: string, endpointId: string): Promise<EndpointRecord> {
      return toEndpointRecord(await find(businessId, endpointId))
    },

    /** Answers the record and its signing secret, which no later answer shows. */
    async create(businessId: string, input: EndpointInput, by: ChangeAuthor) {
      const url = await checkedUrl(input.url)
      const secret = newSigningSecret()
      const row = await db.transaction(async (tx) => {
        // The business's row is locked, so two creations at once cannot both be the tenth.
        await tx.execute(sql`select 1 from businesses where id = ${businessId}::uuid for update`)
        const [{ n } = { n: 0 }] = await tx.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.businessId, businessId))
        if (n >= MAX_ENDPOINTS) {
          throw new ApiError('conflict', `This business has ${MAX_ENDPOINTS} webhook endpoints, the most it may have; remove one first.`)
        }
        const [made] = await tx
          .insert(webhookEndpoints)
          .values({ businessId, url, events: [...input.events], description: input.description ?? null, secret })
          .returning()
        const record = toEndpointRecord(made!)
        await recordChange(tx, {
          businessId,
          action: 'webhook.created',
          by,
          changes: { endpoint: { from: null, to: record.id }, url: { from: null, to: url }, events: { from: null, to: record.events } },
        })
        return made!
      })
      return { record: toEndpointRecord(row), secret }
    },

    async update(businessId: string, endpointId: string, input: EndpointChangesInput, by: ChangeAuthor): Promise<EndpointRecord> {
      const url = input.url === undefined ? undefined : await checkedUrl(input.url)
      return db.transaction(async (tx) => {
        const current = await find(businessId, endpointId, tx)
        const enabling = input.enabled === true && current.disabledAt !== null
        const [changed] = await tx
          .update(webhookEndpoints)
          .set({
            url,
            events: input.events === undefined ? undefined : [...input.events],
            description: input.description,
            disabledAt: input.enabled === undefined ? undefined : input.enabled ? null : (current.disabledAt ?? new Date()),
            // Enabled again: its failures start over.
            failingSince: enabling ? null : undefined,
            updatedAt: new Date(),
          })
          .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.businessId, businessId)))
          .returning()
        const changes = changedFields(toEndpointRecord(current), toEndpointRecord(changed!), AUDITED)
        if (Object.keys(changes).length > 0) {
          await recordChange(tx, {
            businessId,
            action: 'webhook.updated',
            by,
            changes: { endpoint: { from: endpointId, to: endpointId }, ...changes },
          })
        }
        return toEndpointRecord(changed!)
      })
    },

    /** Its deliveries go with it. */
    async remove(businessId: string, endpointId: string, by: ChangeAuthor): Promise<void> {
      await db.transaction(async (tx) => {
        const current = await find(businessId, endpointId, tx)
        await tx.delete(webhookEndpoints).where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.businessId, businessId)))
        await recordChange(tx, {
          businessId,
          action: 'webhook.deleted',
          by,
          changes: { endpoint: { from: endpointId, to: null }, url: { from: current.url, to: null } },
        })
      })
    },

    /** A `webhook.test` event to this endpoint alone, whatever events it takes. */
    async test(businessId: string, endpointId: string): Promise<{ eventId: string }> {
      return db.transaction(async (tx) => {
        const endpoint = await find(businessId, endpointId, tx)
        if (endpoint.disabledAt !== null) {
          throw new ApiError('conflict', `Webhook endpoint ${endpointId} is disabled; enable it first (PATCH {"enabled": true}).`)
        }
        const eventId = await recordWebhookEvent(tx, {
          businessId,
          type: 'webhook.test',
          payload: { endpointId, message: 'A test from keygate: this endpoint receives and verifies deliveries.' },
          endpointId,
        })
        return { eventId: eventId! }
      })
    },

    /** The endpoint's latest deliveries, newest first. */
    async deliveries(businessId: string, endpointId: string): Promise<DeliveryRecord[]> {
      await find(businessId, endpointId)
      const rows = await db
        .select({ delivery: webhookDeliveries, event: webhookEvents.type })
        .from(webhookDeliveries)
        .innerJoin(webhookEvents, eq(webhookEvents.id, webhookDeliveries.eventId))
        .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.businessId, businessId)))
        .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
        .limit(DELIVERIES_SHOWN)
      return rows.map(({ delivery, event }) => ({
        id: delivery.id,
        endpointId: delivery.endpointId,
        eventId: delivery.eventId,
        event,
        status: delivery.status,
        attempts: delivery.attempts,
        lastStatus: delivery.lastStatus,
        lastError: delivery.lastError,
        lastAttemptAt: delivery.lastAttemptAt?.toISOString() ?? null,
        nextAttemptAt: delivery.status === 'pending' ? delivery.nextAttemptAt.toISOString() : null,
        deliveredAt: delivery.deliveredAt?.toISOString() ?? null,
        createdAt: delivery.createdAt.toISOString(),
      }))
    },

    /** Sends a delivery again now, with the same webhook-id, its retries starting over. */
    async resend(businessId: string, endpointId: string, deliveryId: string): Promise<void> {
      await find(businessId, endpointId)
      const [resent] = await db
        .update(webhookDeliveries)
        .set({ status: 'pending', attempts: 0, nextAttemptAt: new Date(), leasedUntil: null })
        .where(
          and(
            eq(webhookDeliveries.id, deliveryId),
            eq(webhookDeliveries.endpointId, endpointId),
            eq(webhookDeliveries.businessId, businessId),
            // One being sent right now is left to its sender: two at once would be two deliveries.
            sql`(${webhookDeliveries.leasedUntil} is null or ${webhookDeliveries.leasedUntil} < now())`,
          ),
        )
        .returning({ id: webhookDeliveries.id })
      if (!resent) {
        const [exists] = await db
          .select({ id: webhookDeliveries.id })
          .from(webhookDeliveries)
          .where(
            and(
              eq(webhookDeliveries.id, deliveryId),
              eq(webhookDeliveries.endpointId, endpointId),
              eq(webhookDeliveries.businessId, businessId),
            ),
          )
        if (exists) throw new ApiError('conflict', `Delivery ${deliveryId} is being sent right now; look again in a minute.`)
        throw new ApiError('not_found', `No delivery with id ${deliveryId} for this endpoint.`)
      }
    },
  }
}

export type WebhookEndpoints = ReturnType<typeof createWebhookEndpoints>
