import { expect, test } from 'bun:test'
import { createFailureBudget } from '../../src/access/rate-limit/failure-budget.ts'

// The failure budget (docs/api.md, "Rate limits"): more than `limit` failures within a
// sliding window, estimated from two fixed windows, blocks the subject for the whole seconds
// until the estimate falls below the limit. Three failures a minute here; each expected wait
// is worked out in its comment from the two windows' counts, at instants off the exact
// second (where the estimate would meet the limit itself).
const budget = { limit: 3, windowSeconds: 60 }
const S = 1_000
const W = 60 * S

function failed(at: number[], subject = 'a') {
  const failures = createFailureBudget(budget)
  for (const now of at) failures.record(subject, now)
  return failures
}

test('nobody is blocked below the limit, or before any failure', () => {
  expect(failed([0, 0]).blocked('a', 0)).toBeNull()
  expect(failed([]).blocked('a', 0)).toBeNull()
  expect(failed([0, 0, 0]).blocked('b', 0)).toBeNull()
})

test('at the limit within one window: blocked until that window has passed', () => {
  const failures = failed([0, 0, 0])
  // The count fills the current window: it ages out with the next, a whole window from its start.
  expect(failures.blocked('a', S / 2)).toBe(60)
  expect(failures.blocked('a', 10.5 * S)).toBe(50)
  expect(failures.blocked('a', W - 1)).toBe(1)
})

test('over the limit within one window: blocked past its end, until the surplus has aged out of the next', () => {
  const failures = failed([0, 0, 0, 0, 0])
  // At 0.5 s: current 5. From 60 s the five count as the previous window: 5 * (1 - t/60 s) < 3
  // once t > 24 s, so at 84 s: 83.5 s from now, 84 whole seconds.
  expect(failures.blocked('a', S / 2)).toBe(84)
})

test("a failure right at the window's end starts the next window, the earlier ones weighed as the previous", () => {
  const failures = failed([0, 0, 0, W])
  // At 61.5 s: previous 3, current 1, 1.5 s into the window: 3 * 58.5/60 + 1 = 3.93 >= 3.
  // Waits until 3 * (1 - t/60 s) + 1 < 3: t = 20 s, 18.5 s from now: 19 whole seconds.
  expect(failures.blocked('a', W + 1.5 * S)).toBe(19)
})

test('only the previous window over the limit: the wait is its share still inside the sliding window', () => {
  const failures = failed([0, 0, 0, 0])
  // At 70.5 s: previous 4, current 0, 10.5 s into the window: 4 * 49.5/60 = 3.3 >= 3.
  // Below 3 once 4 * (1 - t/60 s) < 3: t = 15 s, 4.5 s from now: 5 whole seconds.
  expect(failures.blocked('a', W + 10.5 * S)).toBe(5)
  // At 90 s: 4 * 30/60 = 2 < 3.
  expect(failures.blocked('a', W + 30 * S)).toBeNull()
})

test('half a window on, the previous window counts half: three more failures block again, until the window ends', () => {
  const failures = failed([0, 0, 0, 90 * S, 90 * S, 90 * S])
  // At 90.5 s: previous 3 (the window from 0), current 3 in the window from 60 s: 1.5 + 3 >= 3.
  // The current window alone holds the limit: it ages out at 120 s, 29.5 s from now: 30.
  expect(failures.blocked('a', 90.5 * S)).toBe(30)
})

test('two windows of silence forget everything, however many failures came before', () => {
  expect(failed([0, 0, 0, 0]).blocked('a', 2 * W)).toBeNull()
  expect(failed([0, 0, 0, 0]).blocked('a', 2 * W + S)).toBeNull()
})

test('active only while the last failure of anyone is within a window', () => {
  const failures = createFailureBudget(budget)
  expect(failures.active(0)).toBe(false)
  failures.record('a', 5 * S)
  expect(failures.active(5 * S)).toBe(true)
  expect(failures.active(5 * S + W - 1)).toBe(true)
  expect(failures.active(5 * S + W)).toBe(false)
})
