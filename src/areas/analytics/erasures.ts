import { Elysia } from 'elysia'
import { byKey } from '../../audit/trail.ts'
import { checkErasureBody, ErasureBodySchema, ErasureCreated, ErasureRecordSchema } from '../../events/erasure.ts'
import { IdParams } from '../../shared/validation.ts'
import type { AreaDeps } from '../deps.ts'

const WRITE = { scope: 'ANALYTICS_WRITE', public: false } as const

/**
 * Erasing a person's events (docs/api.md, "Erasure"): private keys with ANALYTICS_WRITE only.
 * Reads hide the events from the 202 on; GET answers how the deletion goes.
 */
export function erasureRoutes({ keyChain, erasures }: AreaDeps) {
  return new Elysia({ name: 'area/analytics/erasures', prefix: '/api/v0/analytics/erasures', detail: { tags: ['analytics'] } })
    .use(keyChain)
    .post(
      '',
      async ({ body, set, grant: { key } }) => {
        const created = await erasures.request(key.businessId, body, { ...byKey(key.id, set), keyId: key.id })
        set.status = 202
        return { id: created.id, status: 'pending' as const }
      },
      {
        access: WRITE,
        body: ErasureBodySchema,
        transform: checkErasureBody,
        response: { 202: ErasureCreated },
        detail: {
          summary: "Erase a person's events, by personId and/or anonymousId",
          description:
            'From this answer on, reads no longer return the events of that personId or anonymousId received before the request (later ones are kept); storage deletes them in the background. The audit trail records analytics.erased with the count, never the identifier. A business may have 100 requests pending; more answer 429 rate_limited with Retry-After.',
        },
      },
    )
    .get('/:id', ({ params, grant: { key } }) => erasures.get(key.businessId, params.id), {
      access: { scope: 'ANALYTICS_WRITE', public: false },
      params: IdParams,
      response: ErasureRecordSchema,
      detail: { summary: 'Show an erasure request: pending or done, and the events deleted' },
    })
}
