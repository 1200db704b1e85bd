/** Something a test built that writes in the background (usage counts, lastUsedAt). */
export interface BackgroundWriter {
  flushBackground(): Promise<unknown>
  /** Writes what is left and stops its timers: the file that built it is done. */
  stop(): Promise<unknown>
}

/** Every writer built in this file's run, for flushBackgroundWrites. */
const writers = new Set<BackgroundWriter>()

export function registerBackgroundWriter(writer: BackgroundWriter): void {
  writers.add(writer)
}

/**
 * Writes what the services built so far hold in memory: run after each test (./preload.ts),
 * so that no background flush of an earlier test's service meets the next test's truncate
 * (on PostgreSQL the two can deadlock).
 */
export async function flushBackgroundWrites(): Promise<void> {
  await Promise.all([...writers].map((writer) => writer.flushBackground()))
}

/**
 * Stops every writer of the file that just ended (./preload.ts): the run's database stays
 * open for the next file of this worker, and no timer of this file may write into it.
 */
export async function stopBackgroundWriters(): Promise<void> {
  const stopping = [...writers]
  writers.clear()
  await Promise.all(stopping.map((writer) => writer.stop().catch(() => {})))
}
