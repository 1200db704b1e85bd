/**
 * Whether an attempt comes from someone with a clean record: neither its email nor its
 * address failed to sign in within the throttle's window. A flood's attempts are
 * `suspect` (its target account and its addresses fail); a person signing in as usual is
 * `clean`, and goes first.
 */
export type CheckPriority = 'clean' | 'suspect'

export interface PasswordCheckLimits {
  /** Password hashes at once: each holds argon2id's memory (64 MiB by default) and a core. */
  concurrent: number
  /** Attempts waiting for a slot, clean and suspect together. */
  waiting: number
  /** Of those, suspect ones: past this, a suspect attempt is refused at once. */
  suspectWaiting: number
  /** Decoy checks (unknown emails) waiting out their time at once. */
  decoys: number
}

export const DEFAULT_PASSWORD_CHECK_LIMITS: PasswordCheckLimits = { concurrent: 4, waiting: 32, suspectWaiting: 8, decoys: 256 }

/** Durations of recent real checks kept, from which a decoy draws its own. */
const SAMPLES = 32

/**
 * The password checks of the sign-in form (docs/decisions.md, "Sign-in under a flood from
 * many addresses"): at most `concurrent` hashes at once, a short line behind them in which
 * clean attempts go before suspect ones, and a refusal (the caller answers 429) past it. A
 * clean attempt finding the line full takes the place of the last suspect one, which is
 * refused. An unknown email is not hashed: its decoy waits as long as a recent real check
 * took, line included, so the answer's time does not tell whether the email has an account.
 */
export function createPasswordChecks(limits: PasswordCheckLimits = DEFAULT_PASSWORD_CHECK_LIMITS) {
  let running = 0
  const lines: Record<CheckPriority, ((slot: (() => void) | null) => void)[]> = { clean: [], suspect: [] }
  let decoys = 0
  const durations: number[] = []

  function release(): void {
    const next = lines.clean.shift() ?? lines.suspect.shift()
    // The slot passes straight from the releasing check to the next: `running` stays.
    if (next) next(release)
    else running--
  }

  /** Whether an attempt of this priority would be refused now, the line being full for it. */
  function full(priority: CheckPriority): boolean {
    if (running < limits.concurrent) return false
    if (priority === 'suspect') return lines.suspect.length >= limits.suspectWaiting || waiting() >= limits.waiting
    return waiting() >= limits.waiting && lines.suspect.length === 0
  }

  function waiting(): number {
    return lines.clean.length + lines.suspect.length
  }

  return {
    /** A slot's release function once one is free, or null (at once, or when a clean attempt takes its place). */
    acquire(priority: CheckPriority): Promise<(() => void) | null> {
      if (running < limits.concurrent) {
        running++
        return Promise.resolve(release)
      }
      if (full(priority)) return Promise.resolve(null)
      // A clean attempt in a full line takes the newest suspect attempt's place.
      if (waiting() >= limits.waiting) lines.suspect.pop()!(null)
      return new Promise((resolve) => lines[priority].push(resolve))
    },

    /** How long a real check took, its wait included: what the decoys draw from. */
    took(ms: number): void {
      durations.push(ms)
      if (durations.length > SAMPLES) durations.shift()
    },

    /**
     * An unknown email's stand-in for a check: refused when a real one of the same priority
     * would be (or when `decoys` already wait), else waits as long as a recent check took.
     * With no check measured yet, `calibrate`: the caller checks a decoy hash for real, once.
     */
    async decoy(priority: CheckPriority): Promise<'waited' | 'refused' | 'calibrate'> {
      if (durations.length === 0) return 'calibrate'
      if (full(priority) || decoys >= limits.decoys) return 'refused'
      decoys++
      try {
        await Bun.sleep(durations[Math.floor(Math.random() * durations.length)]!)
        return 'waited'
      } finally {
        decoys--
      }
    },
  }
}

export type PasswordChecks = ReturnType<typeof createPasswordChecks>
