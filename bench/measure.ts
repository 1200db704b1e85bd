/**
 * What the benchmarks compute from their runs: the median of repetitions, and the CPU time
 * (user + system) of processes from Linux /proc, which shows which side of a run, the
 * service or PostgreSQL, spends the cores.
 */
import { readFileSync } from 'node:fs'

// sysconf(_SC_CLK_TCK) is 100 on every Linux architecture Bun runs on.
const CLOCK_TICKS = 100

/** Seconds of CPU used so far (null off Linux) by the processes `pids` (threads included); gone ones count 0. */
export function cpuSecondsOf(pids: readonly number[]): number | null {
  let ticks = 0
  for (const pid of pids) {
    let stat: string
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
      return null
    }
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks / CLOCK_TICKS
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
