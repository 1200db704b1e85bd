/**
 * `bun bench/insert-forms.ts`: what PostgreSQL pays to insert a batch of events, by the
 * form of the statement, the kind of id and the indexes on the table. Measured without
 * the service: a postgres.js connection of its own per variant and repetition inserts
 * 500-row batches, each its own statement and commit, into a scratch copy of `analytics_events` (dropped at the end).
 *
 * Variants, run interleaved REPETITIONS times (medians):
 * - the statement: rows as one JSON parameter expanded by `jsonb_to_recordset` (the
 *   service's form before issue 11, sent unprepared as Drizzle's `db.execute` does, or
 *   prepared) or `json_to_recordset`, one array parameter per column expanded by
 *   `unnest`, or `COPY ... FROM STDIN`;
 * - ids: random (v4, as `gen_random_uuid()` makes them), or UUIDv7 made by the client;
 * - the indexes: before issue 11, a primary key on id plus the two list indexes; after, a
 *   primary key in the list's order (business_id, occurred_at, id) plus the typed list's.
 *
 * For each: rows/s (wall time of the client), and CPU per row of the database backend
 * and of this client process. Environment: DATABASE_URL (default the `bench` database),
 * BENCH_ROWS (rows per variant and repetition, default 50000), BENCH_BATCH_ROWS (rows a
 * statement, default 500), BENCH_REPETITIONS (3),
 * BENCH_VARIANTS (comma-separated words: only the variants whose label holds one).
 */
import { cpus, loadavg } from 'node:os'
import postgres from 'postgres'
import { type EventRow, insertParameter } from '../src/areas/analytics/service.ts'
import { cpuSecondsOf, median } from './measure.ts'
import { databaseUrl, ensureDatabase, runBenchmark } from './support.ts'

const BATCH_ROWS = Number(process.env.BENCH_BATCH_ROWS || 500)
const ROWS = Number(process.env.BENCH_ROWS || 50_000)
const REPETITIONS = Number(process.env.BENCH_REPETITIONS || 3)
const TABLE = 'analytics_events_insert_forms'
const COLUMNS = [
  'id',
  'business_id',
  'key_id',
  'origin',
  'event_type',
  'url',
  'referrer',
  'anonymous_id',
  'person_id',
  'properties',
  'occurred_at',
  'received_at',
] as const
const RECORD_TYPES =
  'business_id uuid, key_id uuid, origin text, event_type text, url text, referrer text, anonymous_id text, person_id text, properties jsonb, occurred_at timestamptz, received_at timestamptz'

/** A row as the service stores it. */
type Row = EventRow

type Insert = (sql: postgres.Sql, rows: Row[]) => Promise<unknown>

// postgres.js serializes a parameter by the type the server describes: json and jsonb
// parameters take the values themselves and JSON.stringify them.

const FORMS: Record<string, Insert> = {
  'jsonb_to_recordset unprepared': recordset('jsonb', false),
  jsonb_to_recordset: recordset('jsonb', true),
  json_to_recordset: recordset('json', true),
  // The service's form (src/areas/analytics/service.ts): rows grouped by business, key and
  // Origin. Sent as text cast to jsonb, since postgres.js would serialize a string given
  // for a jsonb parameter once more (Drizzle passes it through as it is).
  grouped: (sql, rows) => sql.unsafe(GROUPED_STATEMENT, [insertParameter(rows)], { prepare: true }),
  unnest: (sql, rows) =>
    sql.unsafe(
      `insert into ${TABLE} (${COLUMNS.join(', ')}) select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::timestamptz[], $12::timestamptz[])`,
      COLUMNS.map((column) => rows.map((r) => r[column])) as never,
      { prepare: true },
    ),
  copy: async (sql, rows) => {
    const stream = await sql.unsafe(`copy ${TABLE} (${COLUMNS.join(', ')}) from stdin`).writable()
    const text = rows
      .map((r) => COLUMNS.map((c) => copyField(c === 'properties' ? JSON.stringify(r.properties) : r[c])).join('\t'))
      .join('\n')
    await new Promise<void>((resolve, reject) => {
      stream.on('error', reject)
      stream.on('finish', resolve)
      stream.end(`${text}\n`)
    })
  },
}

const GROUPED_STATEMENT = `insert into ${TABLE} (${COLUMNS.join(', ')})
  select e.id, g.business, g.key, g.origin, e.type, e.url, e.referrer, e.anonymous, e.person,
         coalesce(e.properties, '{}'::jsonb), coalesce(e.occurred, e.received, g.received), coalesce(e.received, g.received)
  from jsonb_to_recordset($1::text::jsonb) as g(business uuid, key uuid, origin text, received timestamptz, events jsonb)
  cross join lateral jsonb_to_recordset(g.events) as e(id uuid, type text, url text, referrer text, anonymous text,
    person text, properties jsonb, received timestamptz, occurred timestamptz)`

/** The rows as one JSON parameter, expanded into records by the database. */
function recordset(type: 'json' | 'jsonb', prepare: boolean): Insert {
  const statement = `insert into ${TABLE} (${COLUMNS.join(', ')}) select id, ${COLUMNS.slice(1).join(', ')} from ${type}_to_recordset($1::${type}) as e(id uuid, ${RECORD_TYPES})`
  return (sql, rows) => sql.unsafe(statement, [rows as never], { prepare })
}

/** COPY's text format: backslash, tab, newline and carriage return escaped; null as \N. */
function copyField(value: string | null): string {
  if (value === null) return '\\N'
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))
}

interface Variant {
  label: string
  form: keyof typeof FORMS
  ids: 'v7' | 'random'
  indexes: 'before' | 'after'
}

const ALL_VARIANTS: Variant[] = [
  {
    label: 'jsonb_to_recordset unprepared, random ids, 3 indexes (before)',
    form: 'jsonb_to_recordset unprepared',
    ids: 'random',
    indexes: 'before',
  },
  { label: 'jsonb_to_recordset prepared, random ids, 3 indexes', form: 'jsonb_to_recordset', ids: 'random', indexes: 'before' },
  { label: 'jsonb_to_recordset prepared, v7 ids, 3 indexes', form: 'jsonb_to_recordset', ids: 'v7', indexes: 'before' },
  { label: 'json_to_recordset prepared, v7 ids, 3 indexes', form: 'json_to_recordset', ids: 'v7', indexes: 'before' },
  { label: 'json_to_recordset prepared, random ids, 2 indexes', form: 'json_to_recordset', ids: 'random', indexes: 'after' },
  { label: 'json_to_recordset prepared, v7 ids, 2 indexes (after)', form: 'json_to_recordset', ids: 'v7', indexes: 'after' },
  { label: 'jsonb_to_recordset prepared, v7 ids, 2 indexes', form: 'jsonb_to_recordset', ids: 'v7', indexes: 'after' },
  {
    label: 'jsonb_to_recordset of rows grouped by key and Origin, prepared, v7 ids, 2 indexes (now)',
    form: 'grouped',
    ids: 'v7',
    indexes: 'after',
  },
  { label: 'unnest prepared, v7 ids, 2 indexes', form: 'unnest', ids: 'v7', indexes: 'after' },
  { label: 'COPY, v7 ids, 2 indexes', form: 'copy', ids: 'v7', indexes: 'after' },
]

// BENCH_VARIANTS=after,COPY: only the variants whose label holds one of these words.
const only = process.env.BENCH_VARIANTS?.split(',')
const VARIANTS = only ? ALL_VARIANTS.filter((v) => only.some((word) => v.label.includes(word))) : ALL_VARIANTS

async function main(): Promise<number> {
  await ensureDatabase(databaseUrl)
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    console.log(
      [
        `date: ${new Date().toISOString()}; bun ${Bun.version}; ${(await sql<{ version: string }[]>`select version()`)[0]!.version.split(' on ')[0]}`,
        `cpu: ${cpus()[0]?.model ?? 'unknown'} x${cpus().length}; load average ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}`,
        `${ROWS} rows per variant in ${BATCH_ROWS}-row statements, each committed, a fresh connection per variant and repetition; ${REPETITIONS} interleaved repetitions, medians`,
      ].join('\n'),
    )
    const results = new Map<Variant, { rowsPerSecond: number; databaseUs: number; clientUs: number }[]>(VARIANTS.map((v) => [v, []]))
    for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
      for (const variant of VARIANTS) {
        await createTable(sql, variant)
        const batches = Array.from({ length: Math.ceil(ROWS / BATCH_ROWS) }, (_, i) =>
          makeRows(Math.min(BATCH_ROWS, ROWS - i * BATCH_ROWS)),
        )
        const insert = FORMS[variant.form]!
        // A connection of its own: a backend's memory is left in a state by the statements
        // it ran (json_to_recordset measured twice as costly after itself as after jsonb's),
        // so a variant must not inherit the one before it.
        const connection = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
        const [{ pid }] = (await connection<{ pid: number }[]>`select pg_backend_pid() as pid`) as unknown as [{ pid: number }]
        // One warm-up batch: the statement is prepared, the table's first pages exist.
        await insert(connection, makeRows(BATCH_ROWS))
        const databaseBefore = cpuSecondsOf([pid])
        const clientBefore = process.cpuUsage()
        const started = performance.now()
        for (const rows of batches) {
          if (variant.ids === 'random') for (const row of rows) row.id = crypto.randomUUID()
          await insert(connection, rows)
        }
        const seconds = (performance.now() - started) / 1000
        const client = process.cpuUsage(clientBefore)
        const databaseAfter = cpuSecondsOf([pid])
        await connection.end({ timeout: 5 })
        const result = {
          rowsPerSecond: ROWS / seconds,
          databaseUs: databaseBefore === null || databaseAfter === null ? Number.NaN : ((databaseAfter - databaseBefore) * 1e6) / ROWS,
          clientUs: (client.user + client.system) / ROWS,
        }
        results.get(variant)!.push(result)
        console.log(
          `  ${repetition}/${REPETITIONS} ${variant.label}: ${Math.round(result.rowsPerSecond)} rows/s, database ${result.databaseUs.toFixed(1)} µs/row, client ${result.clientUs.toFixed(1)} µs/row`,
        )
      }
    }
    console.log(
      [
        '',
        `| Insert of ${BATCH_ROWS}-row batches | rows/s (median) | database CPU per row | client CPU per row | rows/s of each run |`,
        '|---|---|---|---|---|',
        ...VARIANTS.map((variant) => {
          const runs = results.get(variant)!
          const m = (pick: (r: (typeof runs)[number]) => number) => median(runs.map(pick))
          return `| ${variant.label} | ${Math.round(m((r) => r.rowsPerSecond)).toLocaleString('en-US')} | ${m((r) => r.databaseUs).toFixed(1)} µs | ${m((r) => r.clientUs).toFixed(1)} µs | ${runs.map((r) => Math.round(r.rowsPerSecond).toLocaleString('en-US')).join(', ')} |`
        }),
      ].join('\n'),
    )
    return 0
  } finally {
    await sql`drop table if exists ${sql(TABLE)}`
    await sql.end({ timeout: 5 })
  }
}

/** A fresh copy of analytics_events' columns, with the variant's primary key and indexes. */
async function createTable(sql: postgres.Sql, variant: Variant): Promise<void> {
  await sql`drop table if exists ${sql(TABLE)}`
  await sql.unsafe(`create table ${TABLE} (like analytics_events including defaults)`)
  if (variant.indexes === 'before') {
    await sql.unsafe(`alter table ${TABLE} add primary key (id)`)
    await sql.unsafe(`create index on ${TABLE} (business_id, occurred_at desc, id desc)`)
  } else {
    await sql.unsafe(`alter table ${TABLE} add primary key (business_id, occurred_at, id)`)
  }
  await sql.unsafe(`create index on ${TABLE} (business_id, event_type, occurred_at desc, id desc)`)
}

const business = crypto.randomUUID()
const key = crypto.randomUUID()

/** Rows shaped like bench/ingest.ts's events, with client-made v7 ids. */
function makeRows(count: number): Row[] {
  const now = new Date().toISOString()
  return Array.from({ length: count }, () => ({
    id: Bun.randomUUIDv7(),
    business_id: business,
    key_id: key,
    origin: 'https://www.example.com',
    event_type: 'page_view',
    url: 'https://www.example.com/products/42',
    referrer: null,
    anonymous_id: 'anon-bench',
    person_id: null,
    properties: { plan: 'pro', n: 1 },
    occurred_at: now,
    received_at: now,
  }))
}

await runBenchmark(main)
