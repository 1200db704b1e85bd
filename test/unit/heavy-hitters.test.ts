import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { HeavyHitters } from '../../src/usage/heavy-hitters.ts'

// src/usage/heavy-hitters.ts against an exact count of the same stream: the guarantees the
// usage recorder relies on for refused origins and addresses.

/** Streams skewed like real traffic: a few items often, many rarely. */
const streams = fc.array(
  fc.oneof({ weight: 3, arbitrary: fc.constantFrom('a', 'b', 'c', 'd') }, { weight: 2, arbitrary: fc.string({ maxLength: 3 }) }),
  { maxLength: 400 },
)

function exactCounts(stream: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const item of stream) counts.set(item, (counts.get(item) ?? 0) + 1)
  return counts
}

function summarize(stream: readonly string[], capacity: number): HeavyHitters {
  const summary = new HeavyHitters(capacity)
  for (const [at, item] of stream.entries()) summary.add(item, at)
  return summary
}

describe('the heavy-hitter summary (Space-Saving)', () => {
  test('tracks at most its capacity; counts sum to the total, and count - error to the total minus the errors', () => {
    fc.assert(
      fc.property(streams, fc.integer({ min: 1, max: 12 }), (stream, capacity) => {
        const summary = summarize(stream, capacity)
        const entries = summary.entries()
        expect(entries.length).toBeLessThanOrEqual(capacity)
        expect(summary.total).toBe(stream.length)
        expect(entries.reduce((sum, e) => sum + e.count, 0)).toBe(stream.length)
        const certain = entries.reduce((sum, e) => sum + e.count - e.error, 0)
        const errors = entries.reduce((sum, e) => sum + e.error, 0)
        expect(certain + errors).toBe(stream.length)
      }),
    )
  })

  test("each tracked item's count bounds its true count: count - error <= true <= count", () => {
    fc.assert(
      fc.property(streams, fc.integer({ min: 1, max: 12 }), (stream, capacity) => {
        const exact = exactCounts(stream)
        for (const entry of summarize(stream, capacity).entries()) {
          const truth = exact.get(entry.item) ?? 0
          expect(entry.count - entry.error).toBeLessThanOrEqual(truth)
          expect(truth).toBeLessThanOrEqual(entry.count)
        }
      }),
    )
  })

  test('every item seen more than total / capacity times is tracked, with its last sighting', () => {
    fc.assert(
      fc.property(streams, fc.integer({ min: 1, max: 12 }), (stream, capacity) => {
        const summary = summarize(stream, capacity)
        const tracked = new Map(summary.entries().map((e) => [e.item, e]))
        for (const [item, truth] of exactCounts(stream)) {
          if (truth * capacity > stream.length) {
            expect(tracked.has(item)).toBe(true)
            expect(tracked.get(item)!.lastSeen).toBe(stream.lastIndexOf(item))
          }
        }
      }),
    )
  })

  test('with no more distinct items than its capacity, every count is exact', () => {
    fc.assert(
      fc.property(streams, (stream) => {
        const exact = exactCounts(stream)
        const summary = summarize(stream, Math.max(1, exact.size))
        expect(new Map(summary.entries().map((e) => [e.item, e.count]))).toEqual(exact)
        expect(summary.entries().every((e) => e.error === 0)).toBe(true)
      }),
    )
  })

  test('a flood of one-off values keeps every real origin seen more than total / capacity times', () => {
    const summary = new HeavyHitters(100)
    const real = Array.from({ length: 50 }, (_, i) => `https://site-${i}.example`)
    let at = 0
    // 300 sightings of each real origin among 10,000 made-up ones: 25,000 in all, 250 per slot.
    for (let round = 0; round < 300; round++) {
      for (const origin of real) summary.add(origin, at++)
      for (let i = 0; i < 34 && round * 34 + i < 10_000; i++) summary.add(`https://${round}-${i}.flood.example`, at++)
    }
    expect(summary.total).toBe(25_000)
    expect(summary.size).toBe(100)
    const tracked = new Map(summary.entries().map((e) => [e.item, e]))
    for (const origin of real) expect(tracked.get(origin)?.count).toBeGreaterThanOrEqual(300)
    // A made-up origin is never certain of more than its one sighting.
    for (const entry of summary.entries()) if (entry.item.endsWith('.flood.example')) expect(entry.count - entry.error).toBe(1)
  })

  test('may not grow: a new item replaces the least counted one, and an empty summary counts nothing', () => {
    const summary = new HeavyHitters(10)
    expect(summary.add('a', 1, false)).toBe(false)
    expect(summary.size).toBe(0)
    expect(summary.add('a', 1)).toBe(true)
    expect(summary.add('a', 2)).toBe(true)
    expect(summary.add('b', 3, false)).toBe(true)
    expect(summary.entries()).toEqual([expect.objectContaining({ item: 'b', count: 3, error: 2, lastSeen: 3 })])
  })
})
