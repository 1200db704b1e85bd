/** argon2id's cost: memory in KiB and passes over it. */
export interface PasswordCost {
  memoryCost: number
  timeCost: number
}

/** Hashing and checking members' passwords. */
export interface Passwords {
  hash(password: string): Promise<string>
  /** False for a wrong password and for a hash that cannot be read. */
  verify(password: string, hash: string): Promise<boolean>
}

/**
 * argon2id through Bun.password, with Bun's defaults (64 MiB, 2 passes: 100-400 ms of CPU a
 * hash here) unless a cost is given. A hash carries its own cost, so a check costs what the
 * hash did, whatever the setting is now. The test suite lowers the cost: it hashes hundreds
 * of passwords, and what it tests does not depend on how slow a hash is.
 */
export function argon2idPasswords(cost?: PasswordCost): Passwords {
  const algorithm = cost === undefined ? undefined : { algorithm: 'argon2id' as const, ...cost }
  return {
    hash: (password) => Bun.password.hash(password, algorithm),
    verify: (password, hash) => Bun.password.verify(password, hash).catch(() => false),
  }
}
