import { describe, expect, test } from 'bun:test'
import { createPasswordChecks } from '../../src/dashboard/password-checks.ts'

// src/dashboard/password-checks.ts: a bounded number of password hashes at once, a bounded
// line behind them in which clean attempts go first, a refusal past it, and decoys for
// unknown emails that hash nothing.
describe('password checks', () => {
  test('two at once, one in line, the next refused; a release lets the one in line go', async () => {
    const checks = createPasswordChecks({ concurrent: 2, waiting: 1, suspectWaiting: 1, decoys: 1 })
    const first = await checks.acquire('clean')
    const second = await checks.acquire('clean')
    expect(first).not.toBeNull()
    expect(second).not.toBeNull()
    let thirdGot = false
    const third = checks.acquire('clean').then((slot) => {
      thirdGot = true
      return slot
    })
    expect(await checks.acquire('clean')).toBeNull()
    await Bun.sleep(0)
    expect(thirdGot).toBe(false)
    first!()
    expect(await third).not.toBeNull()
    // The line is empty again, the slots full: one more waits, one more after it is refused.
    const fourth = checks.acquire('suspect')
    expect(await checks.acquire('suspect')).toBeNull()
    second!()
    ;(await third)!()
    ;(await fourth)!()
    expect(await checks.acquire('clean')).not.toBeNull()
  })

  test('a clean attempt goes before suspect ones already waiting, and suspect ones have a shorter line', async () => {
    const checks = createPasswordChecks({ concurrent: 1, waiting: 4, suspectWaiting: 2, decoys: 1 })
    const running = (await checks.acquire('suspect'))!
    const order: string[] = []
    const wait = (name: string, priority: 'clean' | 'suspect') =>
      checks.acquire(priority).then((slot) => {
        order.push(slot ? name : `${name} refused`)
        return slot
      })
    const suspects = [wait('suspect 1', 'suspect'), wait('suspect 2', 'suspect'), wait('suspect 3', 'suspect')]
    await Bun.sleep(0)
    expect(order).toEqual(['suspect 3 refused'])
    const clean = wait('clean', 'clean')
    running()
    ;(await clean)!()
    ;(await suspects[0])!()
    ;(await suspects[1])!()
    expect(order).toEqual(['suspect 3 refused', 'clean', 'suspect 1', 'suspect 2'])
  })

  test('a clean attempt finding the line full takes the newest suspect place; with no suspect in line it is refused', async () => {
    const checks = createPasswordChecks({ concurrent: 1, waiting: 2, suspectWaiting: 2, decoys: 1 })
    const running = (await checks.acquire('clean'))!
    const older = checks.acquire('suspect')
    const newer = checks.acquire('suspect')
    const clean = checks.acquire('clean')
    expect(await newer).toBeNull()
    const second = checks.acquire('clean')
    expect(await older).toBeNull()
    // Two clean attempts in line: a third is refused.
    expect(await checks.acquire('clean')).toBeNull()
    running()
    ;(await clean)!()
    ;(await second)!()
  })

  test('a decoy asks for one real check first, then waits what checks took, refused when a real check would be', async () => {
    const checks = createPasswordChecks({ concurrent: 1, waiting: 1, suspectWaiting: 1, decoys: 2 })
    expect(await checks.decoy('clean')).toBe('calibrate')
    checks.took(5)
    expect(await checks.decoy('suspect')).toBe('waited')
    // The slot taken and the line full: a decoy is refused as a real check would be.
    const running = (await checks.acquire('clean'))!
    const waiting = checks.acquire('suspect')
    expect(await checks.decoy('suspect')).toBe('refused')
    expect(await checks.acquire('suspect')).toBeNull()
    running()
    ;(await waiting)!()
  })
})
