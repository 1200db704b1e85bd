import { describe, expect, test } from 'bun:test'
import { createScheduler, type JobRun } from '../../src/background/scheduler.ts'
import { testDatabase } from '../support/database.ts'
import { manualTimers } from '../support/manual-timers.ts'

// The background scheduler (src/background/scheduler.ts), on a clock the tests move: when
// jobs run, one run at a time, retries after failures, stop, and exclusive jobs.

async function setup() {
  const clock = manualTimers()
  const errors: [string, unknown][] = []
  const scheduler = createScheduler({ database: await testDatabase(), timers: clock.timers, onError: (job, e) => errors.push([job, e]) })
  return { clock, errors, scheduler }
}

/** A promise a test resolves when it chooses. */
function latch() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

describe('the scheduler', () => {
  test('a job runs at once, then once a period: never before its time', async () => {
    const { clock, scheduler } = await setup()
    let runs = 0
    scheduler.schedule('count', 1_000, async () => void runs++)
    await clock.advance(0)
    expect(runs).toBe(1)
    await clock.advance(999)
    expect(runs).toBe(1)
    await clock.advance(1)
    expect(runs).toBe(2)
    await clock.advance(3_000)
    expect(runs).toBe(5)
    await scheduler.stop()
  })

  test('firstRunInMs delays only the first run', async () => {
    const { clock, scheduler } = await setup()
    let runs = 0
    scheduler.schedule('later', 1_000, async () => void runs++, { firstRunInMs: 5_000 })
    await clock.advance(4_999)
    expect(runs).toBe(0)
    await clock.advance(1)
    expect(runs).toBe(1)
    await clock.advance(1_000)
    expect(runs).toBe(2)
    await scheduler.stop()
  })

  test('one run at a time: asks during a run make exactly one more run after it', async () => {
    const { clock, scheduler } = await setup()
    const gate = latch()
    let runs = 0
    let concurrent = 0
    let most = 0
    const job = scheduler.schedule('slow', 60_000, async () => {
      runs++
      most = Math.max(most, ++concurrent)
      if (runs === 1) await gate.opened
      concurrent--
    })
    await clock.advance(0)
    expect(runs).toBe(1)
    job.runSoon()
    job.runSoon()
    job.runSoon()
    await clock.advance(0)
    expect(runs).toBe(1)
    gate.open()
    await job.idle()
    await clock.advance(0)
    expect(runs).toBe(2)
    expect(most).toBe(1)
    await scheduler.stop()
  })

  test('runSoon(ms) brings the next run forward, never back', async () => {
    const { clock, scheduler } = await setup()
    let runs = 0
    const job = scheduler.schedule('soon', 60_000, async () => void runs++)
    await clock.advance(0)
    job.runSoon(500)
    await clock.advance(500)
    expect(runs).toBe(2)
    // A later ask than the run already due changes nothing.
    job.runSoon(100)
    job.runSoon(90_000)
    await clock.advance(100)
    expect(runs).toBe(3)
    await scheduler.stop()
  })

  test('a failed run is logged under the job name and tried again after retryMs, doubling up to the period', async () => {
    const { clock, errors, scheduler } = await setup()
    const times: number[] = []
    let failing = true
    scheduler.schedule(
      'flaky',
      10_000,
      async () => {
        times.push(clock.timers.now())
        if (failing) throw new Error('database said no')
      },
      { retryMs: 1_000 },
    )
    await clock.advance(0)
    await clock.advance(1_000 + 2_000 + 4_000 + 8_000)
    // 1 s, 2 s, 4 s, then the period caps the 8 s.
    expect(times).toEqual([0, 1_000, 3_000, 7_000, 15_000])
    expect(errors.map(([job]) => job)).toEqual(['flaky', 'flaky', 'flaky', 'flaky', 'flaky'])
    expect((errors[0]![1] as Error).message).toBe('database said no')
    failing = false
    await clock.advance(10_000)
    // The success resets the backoff: the next run is a period later.
    await clock.advance(10_000)
    expect(times).toEqual([0, 1_000, 3_000, 7_000, 15_000, 25_000, 35_000])
    expect(errors).toHaveLength(5)
    await scheduler.stop()
  })

  test('stop waits for a running job, and nothing runs after it', async () => {
    const { clock, scheduler } = await setup()
    const gate = latch()
    let finished = false
    let runs = 0
    const job = scheduler.schedule('long', 1_000, async () => {
      runs++
      await gate.opened
      finished = true
    })
    await clock.advance(0)
    let stopped = false
    const stopping = scheduler.stop().then(() => (stopped = true))
    await clock.advance(0)
    expect(stopped).toBe(false)
    gate.open()
    await stopping
    expect(finished).toBe(true)
    job.runSoon()
    await clock.advance(10_000)
    expect(runs).toBe(1)
    expect(clock.pending).toBe(0)
  })

  test('an exclusive job runs on one scheduler at a time: the other skips that run', async () => {
    const first = await setup()
    const second = await setup()
    const gate = latch()
    const ran: string[] = []
    const job = (who: string) => async (_run: JobRun) => {
      ran.push(who)
      await gate.opened
    }
    first.scheduler.schedule('exclusive-test', 60_000, job('first'), { exclusive: true })
    await first.clock.advance(0)
    // Its session and lock are taken over the network on PostgreSQL.
    for (let waited = 0; ran.length === 0 && waited < 5_000; waited += 5) await Bun.sleep(5)
    expect(ran).toEqual(['first'])
    const other = second.scheduler.schedule('exclusive-test', 60_000, job('second'), { exclusive: true })
    await second.clock.advance(0)
    await other.idle()
    expect(ran).toEqual(['first'])
    gate.open()
    await first.scheduler.stop()
    // Once the lock is free, the other's next run takes it.
    await second.clock.advance(60_000)
    await other.idle()
    expect(ran).toEqual(['first', 'second'])
    await second.scheduler.stop()
  })
})
