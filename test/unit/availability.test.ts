import { describe, expect, test } from 'bun:test'
import { watchAvailability } from '../../db/availability.ts'
import { DatabaseDeadlineError } from '../../db/faults.ts'

// db/availability.ts: down on the first connection-level failure, up when a probe answers,
// one change each way, and no second outage from a statement sent during the first.
const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })

describe('database availability', () => {
  test('down once on a connection failure, refused at once while down, up when the probe answers', async () => {
    let answering = false
    const changes: boolean[] = []
    const availability = watchAvailability(
      async () => {
        if (!answering) throw refused
      },
      { probeIntervalMs: 10 },
    )
    availability.onChange((change) => changes.push(change.up))
    expect(availability.failed(new Error('a constraint'))).toBe(false)
    expect(availability.up).toBe(true)
    expect(availability.failed(refused)).toBe(true)
    expect(availability.failed(new DatabaseDeadlineError(4000))).toBe(true)
    expect(availability.up).toBe(false)
    expect(() => availability.admit()).toThrow('the database is down')
    answering = true
    for (let i = 0; i < 100 && !availability.up; i++) await Bun.sleep(5)
    expect(availability.up).toBe(true)
    expect(changes).toEqual([false, true])
    availability.close()
  })

  test('a statement sent before the database came back does not start another outage; one sent after does', async () => {
    let now = 1_000
    let answering = false
    const availability = watchAvailability(
      async () => {
        if (!answering) throw refused
      },
      { probeIntervalMs: 10, clock: () => now },
    )
    availability.failed(refused, now)
    const sentDuringOutage = now + 100
    now += 1_000
    answering = true
    for (let i = 0; i < 100 && !availability.up; i++) await Bun.sleep(5)
    expect(availability.up).toBe(true)
    // Its failure arrives late: still unavailable to its caller, but no new outage.
    expect(availability.failed(refused, sentDuringOutage)).toBe(true)
    expect(availability.up).toBe(true)
    expect(availability.failed(refused, now + 1)).toBe(true)
    expect(availability.up).toBe(false)
    availability.close()
  })
})
