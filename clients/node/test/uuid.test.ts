import { expect, test } from 'bun:test'
import { uuidv7 } from '../src/uuid.ts'

test('UUIDv7: version 7, variant 10, the millisecond in the first 48 bits, and no two alike', () => {
  const at = Date.parse('2026-11-27T10:00:00.123Z')
  const ids = Array.from({ length: 10_000 }, (_, i) => uuidv7(at + Math.floor(i / 1000)))
  for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  expect(new Set(ids).size).toBe(ids.length)
  expect(ids.map((id) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16))).toEqual(ids.map((_, i) => at + Math.floor(i / 1000)))
  // Time-ordered: ids of a later millisecond sort after those of an earlier one.
  expect(uuidv7(at + 1) > uuidv7(at)).toBe(true)
})
