import type { Timers } from '../../src/background/scheduler.ts'

/**
 * Timers that fire only when a test moves the clock: `advance(ms)` runs every timer due by
 * then, in time order, letting each run's promises settle before the next fires.
 */
export function manualTimers() {
  let now = 0
  let nextId = 0
  const due = new Map<number, { at: number; run: () => void }>()

  const settle = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve()
    await new Promise((resolve) => setImmediate(resolve))
  }

  const timers: Timers = {
    now: () => now,
    setTimeout(run, ms) {
      const id = nextId++
      due.set(id, { at: now + ms, run })
      return id
    },
    clearTimeout(handle) {
      due.delete(handle as number)
    },
  }

  return {
    timers,
    /** Timers waiting. */
    get pending() {
      return due.size
    },
    /** Moves the clock by `ms`, firing what comes due on the way. */
    async advance(ms: number) {
      const until = now + ms
      await settle()
      for (;;) {
        const next = [...due.entries()].sort((a, b) => a[1].at - b[1].at)[0]
        if (next === undefined || next[1].at > until) break
        due.delete(next[0])
        now = Math.max(now, next[1].at)
        next[1].run()
        await settle()
      }
      now = until
    },
  }
}
