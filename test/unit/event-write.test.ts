import { describe, expect, test } from 'bun:test'
import type { Db } from '../../db/client.ts'
import { eventRow } from '../support/event-row.ts'
import { getTableColumns } from 'drizzle-orm'
import { analyticsEvents } from '../../db/schema/index.ts'
import { COPY_EVENTS, COPY_MIN_ROWS, copyText, type EventRow, eventWriter, insertParameter } from '../../src/events/write.ts'

// The event writer without a database (src/events/write.ts): the COPY text and the insert's
// parameter as strings, and which way a batch goes, over a database handle that only records
// the prepared insert's calls. The rows landing in a table are test/api/analytics.test.ts's.

const row = (more: Partial<EventRow> = {}): EventRow => eventRow({ id: '018f0000-0000-7000-8000-000000000001', ...more })

/**
 * A database handle on which `eventInserter` builds its statement: every builder call answers
 * the builder again, and the prepared statement's `execute` writes down the groups it is given
 * and answers with `fail`'s next error, if any.
 */
function recordingDb(fail: unknown[] = []) {
  const executed: unknown[] = []
  const builder: unknown = new Proxy(() => builder, {
    get(_, property) {
      if (property === 'prepare') {
        return () => ({
          execute: async ({ groups }: { groups: string }) => {
            executed.push(JSON.parse(groups))
            const error = fail.shift()
            if (error !== undefined) throw error
          },
        })
      }
      return () => builder
    },
    apply: () => builder,
  })
  return { db: builder as Db, executed }
}

const coded = (code: string) => Object.assign(new Error(code), { code })
const rows = (count: number, more: Partial<EventRow> = {}) => Array.from({ length: count }, () => row(more))

describe('copyText', () => {
  test("COPY_EVENTS names every column of analytics_events in the table's order, the order of copyText's fields", () => {
    const columns = Object.values(getTableColumns(analyticsEvents)).map((column) => column.name)
    expect(COPY_EVENTS).toBe(`copy analytics_events (${columns.join(', ')}) from stdin`)
    expect(copyText([row()]).split('\t')).toHaveLength(columns.length)
  })

  test('one line per row in COPY_EVENTS column order, tab-separated, null as \\N, empty properties as {}', () => {
    expect(
      copyText([row(), row({ origin: null, url: null, referrer: 'r', anonymous_id: null, person_id: 'p-1', properties: { plan: 'pro' } })]),
    ).toBe(
      '018f0000-0000-7000-8000-000000000001\tb0000000-0000-4000-8000-000000000001\tk0000000-0000-4000-8000-000000000001\thttps://www.example.com\tpage_view\thttps://www.example.com/\t\\N\ta-1\t\\N\t{}\t2026-03-01T10:00:00.000Z\t2026-03-01T10:00:01.000Z\n' +
        '018f0000-0000-7000-8000-000000000001\tb0000000-0000-4000-8000-000000000001\tk0000000-0000-4000-8000-000000000001\t\\N\tpage_view\t\\N\tr\t\\N\tp-1\t{"plan":"pro"}\t2026-03-01T10:00:00.000Z\t2026-03-01T10:00:01.000Z\n',
    )
    expect(copyText([])).toBe('')
  })

  test('escapes backslash, tab, newline and carriage return in every text field, and only those', () => {
    const nasty = 'a\\b\tc\nd\re "q" \'s\''
    const escaped = 'a\\\\b\\tc\\nd\\re "q" \'s\''
    const line = copyText([
      row({
        origin: nasty,
        event_type: nasty,
        url: nasty,
        referrer: nasty,
        anonymous_id: nasty,
        person_id: nasty,
        properties: { v: nasty },
      }),
    ])
    const fields = line.slice(0, -1).split('\t')
    expect(fields).toHaveLength(12)
    expect(fields.slice(3, 9)).toEqual([escaped, escaped, escaped, escaped, escaped, escaped])
    // The JSON's own escapes (\\ for a backslash, \t, \n, \r) are escaped again for COPY.
    expect(fields[9]).toBe(JSON.stringify({ v: nasty }).replaceAll('\\', '\\\\'))
    // Several of one kind in one field: every one, not the first.
    expect(
      copyText([row({ url: '\t\t\\\\' })])
        .split('\t')
        .slice(5, 6),
    ).toEqual(['\\t\\t\\\\\\\\'])
  })
})

describe('insertParameter', () => {
  test('a run of one business, key and Origin is one group with the receive time once; each event carries only what is its own', () => {
    const a = row()
    const b = row({
      id: 'e2',
      url: null,
      anonymous_id: null,
      referrer: 'r',
      person_id: 'p',
      properties: { x: 1 },
      occurred_at: a.received_at,
    })
    const c = row({ id: 'e3', received_at: '2026-03-01T10:00:02.000Z', untimed: true, occurred_at: '2026-03-01T10:00:02.000Z' })
    expect(JSON.parse(insertParameter([a, b, c]))).toEqual([
      {
        business: a.business_id,
        key: a.key_id,
        origin: a.origin,
        received: a.received_at,
        events: [
          { id: a.id, type: 'page_view', url: a.url, anonymous: 'a-1', occurred: a.occurred_at },
          { id: 'e2', type: 'page_view', referrer: 'r', person: 'p', properties: { x: 1 } },
          { id: 'e3', type: 'page_view', url: a.url, anonymous: 'a-1', received: c.received_at, untimed: true },
        ],
      },
    ])
  })

  test('a new group starts at each change of business, key or Origin, and a null Origin is its own', () => {
    const groups = JSON.parse(
      insertParameter([
        row({ id: '1' }),
        row({ id: '2', business_id: 'b2' }),
        row({ id: '3', business_id: 'b2', key_id: 'k2' }),
        row({ id: '4', business_id: 'b2', key_id: 'k2', origin: null }),
        row({ id: '5', business_id: 'b2', key_id: 'k2', origin: null }),
        row({ id: '6', business_id: 'b2', key_id: 'k2' }),
      ]),
    ) as { business: string; key: string; origin: string | null; events: { id: string }[] }[]
    expect(groups.map((g) => [g.business, g.key, g.origin, g.events.map((e) => e.id)])).toEqual([
      [row().business_id, row().key_id, 'https://www.example.com', ['1']],
      ['b2', row().key_id, 'https://www.example.com', ['2']],
      ['b2', 'k2', 'https://www.example.com', ['3']],
      ['b2', 'k2', null, ['4', '5']],
      ['b2', 'k2', 'https://www.example.com', ['6']],
    ])
  })
})

describe('eventWriter', () => {
  function writer(copyFails?: unknown, insertFails: unknown[] = []) {
    const { db, executed } = recordingDb(insertFails)
    const copies: [statement: string, text: string][] = []
    const write = eventWriter(db, async (statement, text) => {
      copies.push([statement, text])
      if (copyFails !== undefined) throw copyFails
    })
    return { write, copies, inserts: executed }
  }

  test('a batch of COPY_MIN_ROWS goes by COPY alone, one row fewer by the insert alone', async () => {
    const { write, copies, inserts } = writer()
    const batch = rows(COPY_MIN_ROWS)
    await write(batch)
    expect(copies).toEqual([[COPY_EVENTS, copyText(batch)]])
    expect(inserts).toHaveLength(0)
    await write(rows(COPY_MIN_ROWS - 1))
    expect(copies).toHaveLength(1)
    expect(inserts).toEqual([JSON.parse(insertParameter(rows(COPY_MIN_ROWS - 1)))])
  })

  test('a large batch holding one untimed event goes by the insert: COPY cannot claim its id', async () => {
    const { write, copies, inserts } = writer()
    const batch = [...rows(COPY_MIN_ROWS), row({ untimed: true })]
    await write(batch)
    expect(copies).toHaveLength(0)
    expect(inserts).toEqual([JSON.parse(insertParameter(batch))])
  })

  test('a COPY that fails (a stored id) is written again by the insert; an unavailable database fails the batch', async () => {
    const stored = writer(coded('23505'))
    await stored.write(rows(COPY_MIN_ROWS))
    expect(stored.copies).toHaveLength(1)
    expect(stored.inserts).toHaveLength(1)
    const down = writer(coded('ECONNREFUSED'))
    await expect(down.write(rows(COPY_MIN_ROWS))).rejects.toThrow('ECONNREFUSED')
    expect(down.inserts).toHaveLength(0)
  })

  test('without COPY every batch goes by the insert', async () => {
    const { db, executed } = recordingDb()
    await eventWriter(db)(rows(COPY_MIN_ROWS))
    expect(executed).toHaveLength(1)
  })

  test('an insert ended by a deadlock is run once more; any other error, or a second deadlock, is thrown', async () => {
    const once = writer(undefined, [coded('40P01')])
    await once.write([row()])
    expect(once.inserts).toHaveLength(2)
    const twice = writer(undefined, [coded('40P01'), coded('40P01')])
    await expect(twice.write([row()])).rejects.toThrow('40P01')
    expect(twice.inserts).toHaveLength(2)
    const other = writer(undefined, [coded('22021')])
    await expect(other.write([row()])).rejects.toThrow('22021')
    expect(other.inserts).toHaveLength(1)
  })
})
