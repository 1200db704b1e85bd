import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { BoundedMap } from '../../src/shared/bounded-map.ts'

describe('BoundedMap', () => {
  test('never holds more than its bound, however many keys pass through', () => {
    const map = new BoundedMap<number, number>(100)
    for (let i = 0; i < 10_000; i++) {
      map.set(i, i)
      expect(map.size).toBeLessThanOrEqual(100)
    }
    // The newest half is always there; the oldest keys are gone.
    for (let i = 9_950; i < 10_000; i++) expect(map.get(i)).toBe(i)
    expect(map.get(0)).toBeUndefined()
  })

  test('a key in use is kept while a flood of new keys passes (a hot key among 100,000 visitors)', () => {
    const map = new BoundedMap<string, string>(1_000)
    map.set('hot', 'kept')
    for (let i = 0; i < 100_000; i++) {
      map.set(`visitor ${i}`, 'x')
      if (i % 400 === 0) expect(map.get('hot')).toBe('kept')
    }
    expect(map.get('hot')).toBe('kept')
  })

  test('delete, has and clear', () => {
    const map = new BoundedMap<string, number>(4)
    map.set('a', 1)
    map.set('b', 2)
    map.set('c', 3) // 'a' and 'b' are now the old half
    expect(map.has('a')).toBe(true)
    expect(map.delete('a')).toBe(true)
    expect(map.delete('a')).toBe(false)
    expect(map.has('a')).toBe(false)
    expect(map.get('b')).toBe(2)
    map.clear()
    expect(map.size).toBe(0)
    expect(map.get('b')).toBeUndefined()
  })

  test('refuses a bound under 2', () => {
    expect(() => new BoundedMap(1)).toThrow('at least 2')
    expect(() => new BoundedMap(Number.NaN)).toThrow('at least 2')
  })

  test('against a model: the last value set is read back unless forgotten, and anything used among the last max/2 distinct keys is kept', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.integer({ min: 0, max: 30 }), value: fc.integer() }),
      fc.record({ kind: fc.constant('get' as const), key: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 30 }) }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 12 }), fc.array(op, { maxLength: 200 }), (max, ops) => {
        const map = new BoundedMap<number, number>(max)
        const model = new Map<number, number>()
        // Keys in order of last use (set, or a get that found the key), most recent last.
        let recent: number[] = []
        for (const step of ops) {
          if (step.kind === 'set') {
            map.set(step.key, step.value)
            model.set(step.key, step.value)
            recent = [...recent.filter((k) => k !== step.key), step.key]
          } else if (step.kind === 'delete') {
            map.delete(step.key)
            model.delete(step.key)
            recent = recent.filter((k) => k !== step.key)
          } else {
            const found = map.get(step.key)
            // Never a value that was not the last one set.
            if (found !== undefined) expect(found).toBe(model.get(step.key)!)
            if (found !== undefined) recent = [...recent.filter((k) => k !== step.key), step.key]
            else recent = recent.filter((k) => k !== step.key)
          }
          expect(map.size).toBeLessThanOrEqual(max)
          for (const key of recent.slice(-Math.floor(max / 2))) expect(map.has(key)).toBe(true)
        }
      }),
    )
  })
})
