import { describe, expect, test } from 'bun:test'
import { watchAvailability } from '../../db/availability.ts'
import { DatabaseDeadlineError } from '../../db/faults.ts'

// db/availability.ts: a failed statement only makes the database suspect; the probe, run
// at once, decides. Down when the probe fails, up when it answers, one change each way,
// and no second outage from a statement sent during the first.
const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })

async function settle(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await Bun.sleep(5)
}

describe('database availability', () => {
  test('a connection failure asks the probe; down once when it fails, refused at once while down, up when it answers', async () => {
    let answering = false
    let probes = 0
    const changes: boolean[] = []
    const availability = watchAvailability(
      async () => {
        probes++
        if (!answering) throw refused
      },
      { probeIntervalMs: 10 },
    )
    availability.onChange((change) => changes.push(change.up))
    expect(availability.failed(new Error('a constraint'))).toBe(false)
    expect(probes).toBe(0)
    expect(availability.failed(refused)).toBe(true)
    expect(availability.failed(new DatabaseDeadlineError(4000))).toBe(true)
    await settle(() => !availability.up)
    expect(availability.up).toBe(false)
    expect(() => availability.admit()).toThrow('the database is down')
    answering = true
    await settle(() => availability.up)
    expect(availability.up).toBe(true)
    expect(changes).toEqual([false, true])
    availability.close()
  })

  test('a failed statement on a database whose probe answers (a locked table, one slow query) changes nothing', async () => {
    let probes = 0
    const changes: boolean[] = []
    let aborted = 0
    const availability = watchAvailability(
      async () => {
        probes++
      },
      { probeIntervalMs: 10 },
    )
    availability.onChange((change) => changes.push(change.up))
    availability.abortOnDown(() => aborted++)
    for (let i = 0; i < 5; i++) expect(availability.failed(new DatabaseDeadlineError(4000))).toBe(true)
    await settle(() => probes > 0)
    await Bun.sleep(30)
    expect(availability.up).toBe(true)
    expect(() => availability.admit()).not.toThrow()
    expect(changes).toEqual([])
    expect(aborted).toBe(0)
    // One probe for the five suspicions that came while it was due: no probe per statement.
    expect(probes).toBe(1)
    availability.close()
  })

  test('while the probe a failure asked for is under way, statements wait for its answer: go on if it answers, refused if not', async () => {
    const answers: ((ok: boolean) => void)[] = []
    const availability = watchAvailability(
      () => new Promise<void>((resolve, reject) => void answers.push((ok) => (ok ? resolve() : reject(refused)))),
      { probeIntervalMs: 10_000 },
    )
    expect(availability.suspicion()).toBeNull()
    availability.failed(refused)
    const first = availability.suspicion()
    expect(first).not.toBeNull()
    await settle(() => answers.length === 1)
    answers[0]!(true)
    await first
    expect(availability.suspicion()).toBeNull()
    expect(() => availability.admit()).not.toThrow()

    availability.failed(refused)
    const second = availability.suspicion()
    expect(second).not.toBeNull()
    await settle(() => answers.length === 2)
    answers[1]!(false)
    await second
    expect(availability.suspicion()).toBeNull()
    expect(() => availability.admit()).toThrow('the database is down')
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
    await settle(() => !availability.up)
    const sentDuringOutage = now + 100
    now += 1_000
    answering = true
    await settle(() => availability.up)
    expect(availability.up).toBe(true)
    // Its failure arrives late: still unavailable to its caller, but no new outage.
    answering = false
    expect(availability.failed(refused, sentDuringOutage)).toBe(true)
    await Bun.sleep(30)
    expect(availability.up).toBe(true)
    expect(availability.failed(refused, now + 1)).toBe(true)
    await settle(() => !availability.up)
    expect(availability.up).toBe(false)
    availability.close()
  })
})
