import { and, eq, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { flowIdempotencyKeys, flowRuns, flows } from '../../../db/schema/index.ts'
import { ApiError } from '../../errors.ts'
import { toRunRecord, type RunRecord } from '../../flows/model.ts'

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

/** How long an Idempotency-Key keeps answering its first run. */
export const IDEMPOTENCY_WINDOW = sql`interval '24 hours'`

/** Thrown inside the claim transaction to roll back the run it created. */
class KeyHeld extends Error {}

/**
 * The digest an idempotency claim remembers: SHA-256 of the input as canonical JSON
 * (object keys sorted at every depth), so a replay that only reorders keys is the same
 * body, and any other difference is not.
 */
export function bodyDigest(input: Record<string, unknown> | undefined): string {
  return new Bun.CryptoHasher('sha256').update(canonicalJson(input ?? null)).digest('hex')
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonicalJson((value as Record<string, unknown>)[name])}`)
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value)
}

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
  const claim = { key: trigger.idempotencyKey, digest: bodyDigest(trigger.input) }
  // A held key can only be lost to expiry between the two steps; retry a few times then.
  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await claimRun(db, values, claim)
    if (claimed) return { ...claimed, replayed: false }
    const [held] = await db
      .select({ runId: flowRuns.id, status: flowRuns.status, digest: flowIdempotencyKeys.bodyDigest })
      .from(flowIdempotencyKeys)
      .innerJoin(flowRuns, eq(flowRuns.id, flowIdempotencyKeys.runId))
      .where(
        and(
          eq(flowIdempotencyKeys.flowId, trigger.flowId),
          eq(flowIdempotencyKeys.keyId, trigger.keyId),
          eq(flowIdempotencyKeys.idempotencyKey, claim.key),
        ),
      )
    if (held && held.digest !== claim.digest) {
      throw new ApiError(
        'idempotency_key_reused',
        `The Idempotency-Key "${claim.key}" was first sent with another body within the last 24 hours; nothing was started. Send a new Idempotency-Key for a different request, or resend the first body to get its run.`,
      )
    }
    if (held) return { runId: held.runId, status: held.status, replayed: true }
  }
  throw new Error(`idempotency key of flow ${trigger.flowId} changed hands three times in a row`)
}

/**
 * Creates the run and claims (flow, API key, idempotency key) for it in one transaction. The claim is one
 * upsert: a new key is inserted; a key whose claim is over 24 h old is taken over; a key
 * claimed within 24 h is left alone and the transaction rolls back, so no second run
 * exists. A concurrent trigger with the same key waits on the claim row's lock and then
 * sees the committed claim, so two triggers can never both create a run.
 */
async function claimRun(
  db: Db,
  values: typeof flowRuns.$inferInsert,
  claim: { key: string; digest: string },
): Promise<{ runId: string; status: RunStatus } | null> {
  try {
    return await db.transaction(async (tx) => {
      const [run] = await tx.insert(flowRuns).values(values).returning({ id: flowRuns.id, status: flowRuns.status })
      const claimed = await tx
        .insert(flowIdempotencyKeys)
        .values({
          flowId: values.flowId,
          keyId: values.keyId,
          idempotencyKey: claim.key,
          bodyDigest: claim.digest,
          runId: run!.id,
        })
        .onConflictDoUpdate({
          target: [flowIdempotencyKeys.flowId, flowIdempotencyKeys.keyId, flowIdempotencyKeys.idempotencyKey],
          set: { runId: run!.id, bodyDigest: claim.digest, createdAt: sql`now()` },
          setWhere: sql`${flowIdempotencyKeys.createdAt} <= now() - ${IDEMPOTENCY_WINDOW}`,
        })
        .returning({ runId: flowIdempotencyKeys.runId })
      if (claimed.length === 0) throw new KeyHeld()
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
  return toRunRecord(run)
}
