import { and, eq, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { flowIdempotencyKeys, flowRuns, flows } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'

export type RunStatus = (typeof flowRuns.$inferSelect)['status']

export interface Trigger {
  flowId: string
  businessId: string
  keyId: string
  input: Record<string, unknown> | undefined
  idempotencyKey: string | undefined
}

export interface Triggered {
  runId: string
  status: RunStatus
  /** True when an earlier run with the same Idempotency-Key was answered instead. */
  replayed: boolean
}

export interface RunRecord {
  id: string
  flowId: string
  status: RunStatus
  input: Record<string, unknown> | null
  idempotencyKey: string | null
  keyId: string
  createdAt: string
}

/** How long an Idempotency-Key keeps answering its first run. */
export const IDEMPOTENCY_WINDOW = sql`interval '24 hours'`

/** Thrown inside the claim transaction to roll back the run it created. */
class KeyHeld extends Error {}

export async function triggerFlow(db: Db, trigger: Trigger): Promise<Triggered> {
  const [flow] = await db
    .select({ id: flows.id })
    .from(flows)
    .where(and(eq(flows.id, trigger.flowId), eq(flows.businessId, trigger.businessId)))
  if (!flow) {
    throw new ApiError('not_found', `There is no flow with id ${trigger.flowId} in this business. Check the id the operator gave you.`)
  }
  const values = {
    flowId: trigger.flowId,
    businessId: trigger.businessId,
    keyId: trigger.keyId,
    input: trigger.input ?? null,
    idempotencyKey: trigger.idempotencyKey ?? null,
  }
  if (trigger.idempotencyKey === undefined) {
    const [run] = await db.insert(flowRuns).values(values).returning({ id: flowRuns.id, status: flowRuns.status })
    return { runId: run!.id, status: run!.status, replayed: false }
  }
  const key = trigger.idempotencyKey
  // A held key can only be lost to expiry between the two steps; retry a few times then.
  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await claimRun(db, values, key)
    if (claimed) return { ...claimed, replayed: false }
    const [held] = await db
      .select({ runId: flowRuns.id, status: flowRuns.status })
      .from(flowIdempotencyKeys)
      .innerJoin(flowRuns, eq(flowRuns.id, flowIdempotencyKeys.runId))
      .where(and(eq(flowIdempotencyKeys.flowId, trigger.flowId), eq(flowIdempotencyKeys.idempotencyKey, key)))
    if (held) return { ...held, replayed: true }
  }
  throw new Error(`idempotency key of flow ${trigger.flowId} changed hands three times in a row`)
}

/**
 * Creates the run and claims (flow, key) for it in one transaction. The claim is one
 * upsert: a new key is inserted; a key whose claim is over 24 h old is taken over; a key
 * claimed within 24 h is left alone and the transaction rolls back, so no second run
 * exists. A concurrent trigger with the same key waits on the claim row's lock and then
 * sees the committed claim, so two triggers can never both create a run.
 */
async function claimRun(
  db: Db,
  values: typeof flowRuns.$inferInsert,
  key: string,
): Promise<{ runId: string; status: RunStatus } | null> {
  try {
    return await db.transaction(async (tx) => {
      const [run] = await tx.insert(flowRuns).values(values).returning({ id: flowRuns.id, status: flowRuns.status })
      const claim = await tx
        .insert(flowIdempotencyKeys)
        .values({ flowId: values.flowId, idempotencyKey: key, runId: run!.id })
        .onConflictDoUpdate({
          target: [flowIdempotencyKeys.flowId, flowIdempotencyKeys.idempotencyKey],
          set: { runId: run!.id, createdAt: sql`now()` },
          setWhere: sql`${flowIdempotencyKeys.createdAt} <= now() - ${IDEMPOTENCY_WINDOW}`,
        })
        .returning({ runId: flowIdempotencyKeys.runId })
      if (claim.length === 0) throw new KeyHeld()
      return { runId: run!.id, status: run!.status }
    })
  } catch (error) {
    if (error instanceof KeyHeld) return null
    throw error
  }
}

export async function getRun(db: Db, businessId: string, flowId: string, runId: string): Promise<RunRecord> {
  const [run] = await db
    .select()
    .from(flowRuns)
    .where(and(eq(flowRuns.id, runId), eq(flowRuns.flowId, flowId), eq(flowRuns.businessId, businessId)))
  if (!run) {
    throw new ApiError('not_found', `There is no run ${runId} of flow ${flowId} in this business. Use the runId the trigger answered.`)
  }
  return {
    id: run.id,
    flowId: run.flowId,
    status: run.status,
    input: run.input,
    idempotencyKey: run.idempotencyKey,
    keyId: run.keyId,
    createdAt: run.createdAt.toISOString(),
  }
}
