import { expect, test } from 'bun:test'
import { createTurnEnd } from '../../src/http/turn-end.ts'

const nextImmediate = () => new Promise<void>((resolve) => setImmediate(resolve))

test('values wait for the end of the turn, and come back together, in the order they were given', async () => {
  const atTurnEnd = createTurnEnd()
  const settled: string[] = []
  void atTurnEnd('a').then((value) => settled.push(value))
  void atTurnEnd('b').then((value) => settled.push(value))
  // Every microtask of the turn runs first: nothing is handed back within it.
  for (let i = 0; i < 10; i++) await Promise.resolve()
  expect(settled).toEqual([])
  // An immediate scheduled after both runs after their release.
  await nextImmediate()
  expect(settled).toEqual(['a', 'b'])
})

test('a value given in a later turn waits for that turn to end, not released with the earlier ones', async () => {
  const atTurnEnd = createTurnEnd()
  const settled: string[] = []
  void atTurnEnd('first').then((value) => settled.push(value))
  await nextImmediate()
  expect(settled).toEqual(['first'])
  void atTurnEnd('second').then((value) => settled.push(value))
  for (let i = 0; i < 10; i++) await Promise.resolve()
  expect(settled).toEqual(['first'])
  await nextImmediate()
  expect(settled).toEqual(['first', 'second'])
})

test('the same value object is handed back, not a copy', async () => {
  const atTurnEnd = createTurnEnd()
  const response = new Response('x')
  expect(await atTurnEnd(response)).toBe(response)
})
