import { describe, expect, test } from 'bun:test'
import { createBackgroundWriter } from '../../db/background-writes.ts'

// db/background-writes.ts with a write the test steers and a clock it moves: retries in
// halves after a doubling pause, a bounded number of tries, drops counted and reported
// once per run of drops, a bounded queue.

function steeredWrite() {
  const written: number[][] = []
  const tried: number[][] = []
  let failing = true
  return {
    written,
    tried,
    set failing(value: boolean) {
      failing = value
    },
    write: async (rows: readonly number[]) => {
      tried.push([...rows])
      if (failing) throw new Error('the table is locked')
      written.push([...rows])
    },
  }
}

describe('background writes', () => {
  test('a failed write is retried in halves once its pause is over, and arrives when the database takes it', async () => {
    let now = 0
    const target = steeredWrite()
    const writer = createBackgroundWriter(target.write, { retryDelayMs: 100, maxAttempts: 4, clock: () => now })
    await writer.run([1, 2, 3, 4, 5])
    expect(target.tried).toEqual([[1, 2, 3, 4, 5]])
    expect(writer.stats).toEqual({ written: 0, failures: 1, dropped: 0, waiting: 5 })
    // Not due yet: nothing is tried.
    now = 99
    await writer.run([])
    expect(target.tried).toHaveLength(1)
    // Due: the first half fails, and the round stops there (one failure per round).
    now = 100
    await writer.run([])
    expect(target.tried.slice(1)).toEqual([[1, 2, 3]])
    expect(writer.stats.waiting).toBe(5)
    // The second retry waits twice as long; the other half was not tried, so it is due now.
    target.failing = false
    now = 101
    await writer.run([6])
    expect(target.written).toEqual([[6], [4, 5]])
    now = 300
    await writer.run([])
    expect(target.written).toEqual([[6], [4, 5], [1, 2], [3]])
    expect(writer.stats).toEqual({ written: 6, failures: 2, dropped: 0, waiting: 0 })
  })

  test('rows that failed every try are dropped and counted; the drop is reported once until a write succeeds', async () => {
    let now = 0
    const target = steeredWrite()
    const drops: number[] = []
    const writer = createBackgroundWriter(target.write, {
      retryDelayMs: 10,
      maxAttempts: 2,
      clock: () => now,
      onDrop: (rows) => drops.push(rows),
    })
    await writer.run([1, 2])
    for (let round = 0; round < 4; round++) {
      now += 1_000
      await writer.run([])
    }
    expect(writer.stats).toEqual({ written: 0, failures: 3, dropped: 2, waiting: 0 })
    expect(drops).toEqual([1])
    await writer.run([3])
    now += 1_000
    await writer.run([])
    expect(writer.stats.dropped).toBe(3)
    expect(drops).toEqual([1])
    target.failing = false
    await writer.run([4])
    target.failing = true
    await writer.run([5])
    now += 1_000
    await writer.run([])
    expect(drops).toEqual([1, 1])
  })

  test('at most maxWaitingRows wait for a retry: the oldest go first, counted', async () => {
    const target = steeredWrite()
    const writer = createBackgroundWriter(target.write, { maxWaitingRows: 4, retryDelayMs: 60_000 })
    await writer.run([1, 2, 3])
    await writer.run([4, 5, 6])
    expect(writer.stats).toMatchObject({ waiting: 4, dropped: 2 })
    // An explicit flush tries what waits at once, whatever its pause; shutdown drops the rest.
    target.failing = false
    await writer.run([], { everything: true })
    expect(target.written.flat().sort()).toEqual([3, 4, 5, 6])
    target.failing = true
    await writer.run([7])
    writer.abandon()
    expect(writer.stats.waiting).toBe(0)
    expect(writer.stats.dropped).toBe(3)
  })
})
