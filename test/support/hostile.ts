import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../db/client.ts'
import { testDatabase, testEventsDatabase } from './database.ts'

/**
 * Hostile input for the fuzz tests (test/api/fuzz.test.ts, test/dashboard/fuzz.test.ts):
 * strings PostgreSQL refuses, dates it cannot hold, numbers past every range, deep
 * nesting, prototype-pollution keys, very long strings, control characters.
 */

/**
 * Runs per surface: the whole fuzz suite stays well under 30 s per engine. FUZZ_RUNS=500
 * digs deeper by hand; a failure prints its counterexample and seed.
 */
export const RUNS = Number(process.env.FUZZ_RUNS) || 40

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit))
const control = fc.integer({ min: 0, max: 0x1f }).map((unit) => String.fromCharCode(unit))

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({
    unit: fc.oneof(loneSurrogate, control, fc.constantFrom('a', '\u0000', '\ud83d\ude00', '€', '"', '\\', '%', '/', '.', '-')),
    maxLength: 12,
  }),
  fc.constantFrom(
    '\ud800',
    'a\udfffb',
    '\u0000',
    '__proto__',
    'constructor',
    'prototype',
    'x'.repeat(300),
    'x'.repeat(70_000),
    '0000-01-01T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '-000001-01-01T00:00:00Z',
    '9999-12-31T23:59:60Z',
    '2026-02-30T00:00:00Z',
    '1969-12-31T23:59:59Z',
    'NaN',
    '1e309',
    '../../admin',
    '//evil.example',
    'javascript:alert(1)',
    'a@b.io',
    'page_view',
    '00000000-0000-4000-8000-000000000000',
    '',
    ' ',
  ),
)

export const hostileNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(1e308, -1e308, 2 ** 53, -(2 ** 63), 1e-320, 0.1, -0))

/** Property names, pollution attempts included. */
export const hostileKey = fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'))

export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 4 }),
  ),
})).value

/** Nesting far past any parser's comfort, as raw JSON text. */
export const deepJson = fc.oneof(
  fc.integer({ min: 30, max: 200_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc.integer({ min: 30, max: 200_000 }).map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)),
  fc.integer({ min: 1, max: 200_000 }).map((depth) => '['.repeat(depth)),
)

/**
 * A valid body with one field replaced by a hostile value, a hostile field added, or the
 * whole body replaced, as JSON text (JSON.stringify escapes lone surrogates as \udXXX,
 * which is how a client sends them).
 */
export function mutatedBody(valid: Record<string, unknown>): fc.Arbitrary<string> {
  const fields = Object.keys(valid)
  return fc.oneof(
    fc.tuple(fc.constantFrom(...fields), hostileValue).map(([field, value]) => JSON.stringify({ ...valid, [field]: value })),
    fc
      .tuple(hostileKey, hostileValue)
      .map(([field, value]) => `${JSON.stringify(valid).slice(0, -1)},${JSON.stringify(field)}:${JSON.stringify(value) ?? 'null'}}`),
    hostileValue.map((value) => JSON.stringify(value) ?? 'null'),
    deepJson,
    fc.string({ unit: 'binary', maxLength: 60 }),
  )
}

/** Every byte percent-encoded, plus sequences no UTF-8 decoder accepts. */
export const hostileQueryValue: fc.Arbitrary<string> = fc.oneof(
  hostileString.map((value) => [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')),
  fc.constantFrom('%', '%zz', '%FF', '%ED%A0%80', '%00', '%C0%80', '%E2%82', '+', '&&', '=='),
)

/** Rows in every table a request could write, to show a refusal wrote nothing. */
export async function storedRows(): Promise<number> {
  const [events] = await queryRows<{ n: number }>((await testEventsDatabase()).db, sql`select count(*) as n from analytics_events`)
  const [rest] = await queryRows<{ n: number }>(
    (await testDatabase()).db,
    sql`select (select count(*) from people) + (select count(*) from companies)
      + (select count(*) from audience_lists) + (select count(*) from audience_list_members) + (select count(*) from blogs)
      + (select count(*) from blog_authors) + (select count(*) from blog_tags) + (select count(*) from blog_post_tags)
      + (select count(*) from flow_runs) + (select count(*) from memory_documents) + (select count(*) from businesses)
      + (select count(*) from api_keys) + (select count(*) from flows) + (select count(*) from members) as n`,
  )
  return Number(events!.n) + Number(rest!.n)
}
