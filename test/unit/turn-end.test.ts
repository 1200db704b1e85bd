import { expect, test } from 'bun:test'
import { createTurnEnd } from '../../src/http/turn-end.ts'

const nextImmediate = () => new Promise<void>((resolve) => setImmediate(resolve))

test('waiters are released at the end of the turn, together, in the order they came', async () => {
  const atTurnEnd = createTurnEnd()
  const released: string[] = []
  void atTurnEnd().then(() => released.push('a'))
  void atTurnEnd().then(() => released.push('b'))
  // Every microtask of the turn runs first: nothing is released within it.
  for (let i = 0; i < 10; i++) await Promise.resolve()
  expect(released).toEqual([])
  // An immediate scheduled after both runs after their release.
  await nextImmediate()
  expect(released).toEqual(['a', 'b'])
})

test('a waiter of a later turn waits for that turn to end, not released with the earlier ones', async () => {
  const atTurnEnd = createTurnEnd()
  const released: string[] = []
  void atTurnEnd().then(() => released.push('first'))
  await nextImmediate()
  expect(released).toEqual(['first'])
  void atTurnEnd().then(() => released.push('second'))
  for (let i = 0; i < 10; i++) await Promise.resolve()
  expect(released).toEqual(['first'])
  await nextImmediate()
  expect(released).toEqual(['first', 'second'])
})
