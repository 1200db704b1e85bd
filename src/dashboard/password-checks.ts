/**
 * At most `concurrent` password checks at once and `waiting` more in line. Each check holds
 * argon2id's memory (64 MiB with Bun.password's defaults) while it runs, so a sign-in flood
 * from many addresses, each within its own budget, must not multiply that: past the line,
 * an attempt is refused at once (the caller answers 429).
 */
export function createPasswordChecks(concurrent = 4, waiting = 64) {
  let running = 0
  const line: (() => void)[] = []

  function release(): void {
    const next = line.shift()
    if (next) next()
    else running--
  }

  return {
    /** A slot's release function once one is free, or null at once when the line is full. */
    acquire(): Promise<(() => void) | null> {
      if (running < concurrent) {
        running++
        return Promise.resolve(release)
      }
      if (line.length >= waiting) return Promise.resolve(null)
      // The slot passes straight from the releasing check to this one: `running` stays.
      return new Promise((resolve) => line.push(() => resolve(release)))
    },
  }
}

export type PasswordChecks = ReturnType<typeof createPasswordChecks>
