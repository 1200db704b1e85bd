/** Time and timers, handed in so that tests move time instead of waiting for it. */
export interface Clock {
  /** Milliseconds since the epoch (event timestamps and ids are read from it). */
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}
