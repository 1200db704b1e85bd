import { t } from 'elysia'
import { RunStatusSchema } from '../../flows/model.ts'
import { describe, JsonObject, MAX_JSON_FIELD_BYTES, Uuid } from '../../shared/validation.ts'

export const MAX_INPUT_BYTES = MAX_JSON_FIELD_BYTES

export const FlowParams = t.Object({ id: describe(Uuid, 'The flow id the operator got from POST /admin/v0/businesses/:id/flows.') })
export const RunParams = t.Object({ id: Uuid, runId: Uuid })

/** The trigger's body; it may also be left out entirely. */
export const TriggerBody = t.Object({
  input: t.Optional(
    JsonObject(
      100,
      `Whatever the flow needs: a JSON object, at most 100 top-level properties, 8 levels deep, ${MAX_INPUT_BYTES / 1024} KiB.`,
    ),
  ),
})

export const TriggerHeaders = t.Object({
  'idempotency-key': t.Optional(
    t.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7E]+$',
      error: 'must be 1-255 printable ASCII characters',
      description: 'A retry with the same key within 24 h answers the first run instead of starting another.',
    }),
  ),
})

export const Triggered = t.Object({ runId: t.String(), status: RunStatusSchema })
