import { getTableName, sql, type SQL } from 'drizzle-orm'
import { queryRows, type Db } from '../../../db/client.ts'
import { ApiError } from '../../errors.ts'
import type { IdentitySpec } from './kind.ts'
import { DEADLOCK_DETECTED, fieldPath, invalidField, recordPath, sqlState, UNIQUE_VIOLATION } from '../../shared/validation.ts'

/**
 * Upserts of people and companies: records matched on `externalId`, else on a second key
 * (email or domain, case-insensitively). A whole batch is ONE statement (below).
 *
 * Matching, per record of the request:
 * - the stored record with its externalId is updated;
 * - else the stored record with its second key is updated, and takes the externalId when
 *   it had none ("claims" it: an email-only person later identified by your backend);
 * - else a new record is inserted.
 * Fields left out keep their stored values; `properties` are merged into the stored ones.
 * A second key held by a stored record with another externalId is a conflict (409): a key
 * identifies one record, so it cannot move, and nothing of the batch is written.
 *
 * Who may change what: `mayUpdate` says, per record, whether it may
 * change a stored record. A record that may not (a public key's, without a verified
 * identity) creates what does not exist and changes nothing stored, and is never a
 * conflict: a public key must learn nothing about the stored records from its answer.
 *
 * Within a batch, records with the same match key (the externalId, else the second key)
 * are one record and the last one wins. Two remaining records with the same second key but
 * different match keys are refused (400): one key would name two records. Two records that
 * reach one stored record through different keys: the last one wins.
 *
 * The statement reads the batch from one JSON parameter, resolves every record against
 * the stored ones, computes the conflicts, and then updates and inserts only if there are
 * none; its answer lists the conflicts or the ids written. The unique indexes settle races
 * with concurrent upserts: a unique violation or deadlock runs the statement again (it then
 * sees the other request's rows), at most three times in all.
 */

type InputRecord = Record<string, unknown> & { externalId?: string; properties?: Record<string, unknown> }

/** One deduplicated record as the statement reads it (snake_case keys = recordset columns). */
type StatementRow = Record<string, string | number | boolean | Record<string, unknown> | null>

export interface UpsertResult {
  /** Ids written, in the order of the request's records. */
  ids: string[]
}

export async function upsertRecords(
  db: Db,
  spec: IdentitySpec,
  businessId: string,
  records: readonly InputRecord[],
  isBatch: boolean,
  mayUpdate: (record: InputRecord) => boolean = () => true,
): Promise<UpsertResult> {
  const rows = dedupe(spec, records, isBatch, mayUpdate)
  const statement = upsertStatement(spec, businessId, rows)
  for (let attempt = 1; ; attempt++) {
    let outcome: { outcome: 'conflict' | 'written'; ord: number; id: string | null }[]
    try {
      outcome = await queryRows(db, statement)
    } catch (error) {
      // A concurrent upsert inserted the same key (or locked rows in another order)
      // after our snapshot: run again, and the statement sees its rows.
      if (attempt < 3 && isRetryable(error)) continue
      if (isRetryable(error)) {
        throw new ApiError('conflict', 'Concurrent requests changed the same records; nothing was written. Retry the request.')
      }
      throw error
    }
    const conflict = outcome.find((row) => row.outcome === 'conflict')
    if (conflict) throw conflictError(spec, records, conflict.ord, isBatch)
    return {
      ids: outcome
        .filter((row) => row.id !== null)
        .sort((a, b) => a.ord - b.ord)
        .map((row) => row.id!),
    }
  }
}

function dedupe(
  spec: IdentitySpec,
  records: readonly InputRecord[],
  isBatch: boolean,
  mayUpdate: (record: InputRecord) => boolean,
): StatementRow[] {
  const key2 = spec.secondKey.field
  const byMatchKey = new Map<string, StatementRow>()
  records.forEach((record, ord) => {
    const externalId = record.externalId ?? null
    const second = typeof record[key2] === 'string' ? (record[key2] as string) : null
    if (externalId === null && second === null) {
      const reason = `give "externalId" or "${key2}" (or both) to say which ${spec.noun} to create or update`
      throw isBatch ? invalidField(recordPath(spec.batchKey, ord), reason) : new ApiError('invalid_request', `Invalid body: ${reason}.`)
    }
    const row: StatementRow = {
      ord,
      external_id: externalId,
      [spec.secondKey.column.name]: spec.secondKey.field === 'domain' && second !== null ? second.toLowerCase() : second,
      properties: record.properties ?? null,
      may_update: mayUpdate(record),
    }
    for (const { field, column } of spec.fields) row[column.name] = typeof record[field] === 'string' ? (record[field] as string) : null
    const matchKey = externalId !== null ? `x:${externalId}` : `k:${second!.toLowerCase()}`
    byMatchKey.delete(matchKey) // re-inserted below, so the map keeps the order of last occurrence
    byMatchKey.set(matchKey, row)
  })
  const rows = [...byMatchKey.values()].sort((a, b) => Number(a.ord) - Number(b.ord))
  const holders = new Map<string, number>()
  for (const row of rows) {
    const second = row[spec.secondKey.column.name]
    if (typeof second !== 'string') continue
    const earlier = holders.get(second.toLowerCase())
    if (earlier !== undefined) {
      throw invalidField(
        fieldPath(recordPath(spec.batchKey, Number(row.ord)), key2),
        `${spec.batchKey}[${earlier}] has the same ${key2} but is matched on another key, and ${article(key2)} ${key2} identifies one ${spec.noun}; send each ${spec.noun} once per batch`,
      )
    }
    holders.set(second.toLowerCase(), Number(row.ord))
  }
  return rows
}

function upsertStatement(spec: IdentitySpec, businessId: string, rows: StatementRow[]): SQL {
  // Identifiers come from the constant kinds (service.ts), never from a request.
  const table = sql.raw(getTableName(spec.table))
  const keyColumn = spec.secondKey.column.name
  const key = sql.raw(keyColumn)
  const fieldColumns = spec.fields.map((f) => f.column.name)
  const recordset = sql.raw(
    [
      'ord int',
      'external_id text',
      `${keyColumn} text`,
      ...fieldColumns.map((c) => `${c} text`),
      'properties jsonb',
      'may_update boolean',
    ].join(', '),
  )
  const insertColumns = sql.raw(['external_id', keyColumn, ...fieldColumns].join(', '))
  const setFields = sql.raw(['external_id', keyColumn, ...fieldColumns].map((c) => `${c} = coalesce(t.${c}, p.${c})`).join(',\n      '))
  return sql`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as i(${recordset})
    ),
    resolved as (
      select i.*, x.id as by_external_id, k.id as by_key, k.external_id as key_holder_external_id
      from input i
      left join ${table} x on x.business_id = ${businessId}::uuid and x.external_id = i.external_id
      left join ${table} k on k.business_id = ${businessId}::uuid and lower(k.${key}) = lower(i.${key})
    ),
    conflicts as (
      select ord from resolved
      where may_update and by_key is not null
        and ((by_external_id is not null and by_key <> by_external_id)
          or (by_external_id is null and external_id is not null and key_holder_external_id is not null))
    ),
    targets as (
      select distinct on (target_id) *
      from (select *, coalesce(by_external_id, by_key) as target_id from resolved) matched
      where target_id is not null and may_update
      order by target_id, ord desc
    ),
    updated as (
      update ${table} p set
        ${setFields},
        properties = p.properties || coalesce(t.properties, '{}'::jsonb),
        updated_at = now()
      from targets t
      where p.id = t.target_id and not exists (select 1 from conflicts)
      returning p.id, t.ord
    ),
    inserted as (
      insert into ${table} (business_id, ${insertColumns}, properties)
      select ${businessId}::uuid, ${insertColumns}, coalesce(properties, '{}'::jsonb)
      from resolved
      where by_external_id is null and by_key is null and not exists (select 1 from conflicts)
      order by ord
      returning id, external_id, ${key}
    )
    select 'conflict' as outcome, ord, null::uuid as id from conflicts
    union all
    select 'written', ord, id from updated
    union all
    select 'written', r.ord, n.id
    from inserted n
    join resolved r on r.by_external_id is null and r.by_key is null
      and r.external_id is not distinct from n.external_id
      and lower(r.${key}) is not distinct from lower(n.${key})`
}

function conflictError(spec: IdentitySpec, records: readonly InputRecord[], ord: number, isBatch: boolean): ApiError {
  const key2 = spec.secondKey.field
  const field = fieldPath(recordPath(isBatch ? spec.batchKey : null, ord), key2)
  return new ApiError(
    'conflict',
    `Body field "${field}": another ${spec.noun} with a different externalId already has the ${key2} ${JSON.stringify(records[ord]?.[key2])}, and ${article(key2)} ${key2} identifies one ${spec.noun}. Nothing was written; send that ${spec.noun}'s externalId, or leave ${key2} out.`,
  )
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a'
}

/** A unique violation or a deadlock: both settle on a second run. */
function isRetryable(error: unknown): boolean {
  const state = sqlState(error)
  return state === UNIQUE_VIOLATION || state === DEADLOCK_DETECTED
}
