/** Something a test built that writes in the background (usage counts, lastUsedAt). */
export interface BackgroundWriter {
  flushBackground(): Promise<unknown>
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
