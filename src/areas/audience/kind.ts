import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import type { companies, people } from '../../../db/schema/index.ts'

// What the queries (service.ts) and the upsert statement (upsert.ts) both read of a kind of
// matched record, people or companies; kept apart so that neither imports the other.

// The queries widen `kind.table` to this union: Drizzle types a query over a union of
// tables, not over a generic one. The rows are still the kind's own, for its toRecord.
export type MatchedTable = typeof people | typeof companies

export interface IdentitySpec {
  table: MatchedTable
  /** What one record is, for messages. */
  noun: 'person' | 'company'
  /** The body's name for batches: `people`, `companies`. */
  batchKey: 'people' | 'companies'
  /** The second key: its body name and its column (`email`, `domain`). */
  secondKey: { field: 'email' | 'domain'; column: AnyPgColumn }
  /** The other text fields: body name and column. */
  fields: readonly { field: string; column: AnyPgColumn }[]
}
