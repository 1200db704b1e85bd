import { Elysia, t } from 'elysia'
import type { AreaDeps } from '../deps.ts'
import { assertStorableJson, strictBody } from '../../shared/validation.ts'
import { FlowRun } from '../../flows/model.ts'
import { FlowParams, MAX_INPUT_BYTES, RunParams, TriggerBody, TriggerHeaders, Triggered } from './model.ts'
import { getRun, triggerFlow } from './service.ts'

const triggerBody = strictBody(TriggerBody)

/**
 * Flow triggers. Operators define flows (POST /admin/v0/businesses/:id/flows); a trigger
 * records a queued run and answers 202 with its id, to public and private keys alike and
 * with nothing else in it. An Idempotency-Key makes retries safe for 24 h.
 */
export function flowRoutes({ db, keyChain }: AreaDeps) {
  return new Elysia({ name: 'area/flow', prefix: '/api/v0/flow', detail: { tags: ['flow'] } })
    .use(keyChain)
    .post(
      '/:id/trigger',
      async ({ params, body, headers, set, grant: { key } }) => {
        const run = await triggerFlow(db, {
          flowId: params.id,
          businessId: key.businessId,
          keyId: key.id,
          input: body?.input,
          idempotencyKey: headers['idempotency-key'],
        })
        set.status = 202
        if (run.replayed) (set.headers as Record<string, string>)['idempotent-replayed'] = 'true'
        return { runId: run.runId, status: run.status }
      },
      {
        access: { scope: 'FLOW_TRIGGER', public: true },
        params: FlowParams,
        headers: TriggerHeaders,
        body: t.Optional(triggerBody.schema),
        // The body is optional: a trigger without one (no Content-Type either) is fine,
        // and so is a JSON null, which says the same.
        transform({ body }) {
          if (body === undefined || body === null) return
          triggerBody.check({ body })
          // The strict check above has established that the body is a trigger object.
          const { input } = body as { input?: unknown }
          if (input !== undefined) assertStorableJson(input, 'input', MAX_INPUT_BYTES)
        },
        response: { 202: Triggered },
        detail: {
          summary: 'Trigger a flow: records a queued run, answers 202 {runId, status}',
          description:
            'Send `Idempotency-Key` to make retries safe: the same key for the same flow within 24 hours answers the first run (header `Idempotent-Replayed: true`) instead of starting another.',
        },
      },
    )
    .get('/:id/runs/:runId', ({ params, grant: { key } }) => getRun(db, key.businessId, params.id, params.runId), {
      access: { scope: 'FLOW_TRIGGER', public: false },
      params: RunParams,
      response: FlowRun,
      detail: { summary: 'Show a run of a flow' },
    })
}
