import { describe, expect, test } from 'bun:test'
import { createPasswordChecks } from '../../src/dashboard/password-checks.ts'

// src/dashboard/password-checks.ts: a bounded number of password hashes at once, a bounded
// line behind them, and a refusal past it.
describe('password checks', () => {
  test('two at once, one in line, the next refused; a release lets the one in line go', async () => {
    const checks = createPasswordChecks(2, 1)
    const first = await checks.acquire()
    const second = await checks.acquire()
    expect(first).not.toBeNull()
    expect(second).not.toBeNull()
    let thirdGot = false
    const third = checks.acquire().then((slot) => {
      thirdGot = true
      return slot
    })
    expect(await checks.acquire()).toBeNull()
    await Bun.sleep(0)
    expect(thirdGot).toBe(false)
    first!()
    expect(await third).not.toBeNull()
    // The line is empty again, the slots full: one more waits, one more after it is refused.
    const fourth = checks.acquire()
    expect(await checks.acquire()).toBeNull()
    second!()
    ;(await third)!()
    ;(await fourth)!()
    expect(await checks.acquire()).not.toBeNull()
  })
})
