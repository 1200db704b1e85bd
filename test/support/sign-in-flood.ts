import { argon2idPasswords, type Passwords } from '../../src/members/passwords.ts'
import { signInForm, signInFrom } from './sign-in-form.ts'
import { TEST_PASSWORD_COST } from './service.ts'

export { signInForm, signInFrom } from './sign-in-form.ts'

/** `attempts` wrong passwords for `email` from one address, all at once: the count of each status. */
export async function floodSignIns(base: string, options: { email: string; address: string; attempts: number }) {
  const form = await signInForm(base)
  const statuses = await Promise.all(
    Array.from({ length: options.attempts }, (_, i) => signInFrom(base, form, options.email, `not the password ${i}`, options.address)),
  )
  const counts: Record<number, number> = {}
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

/**
 * argon2id at the tests' cost, wrapped so that a test sees every password checked (never a
 * hash made) and how many checks ran at once, and can hold the checks until it lets them go.
 */
export function heldPasswords() {
  const real = argon2idPasswords(TEST_PASSWORD_COST)
  const waiting: (() => void)[] = []
  let holding = false
  let running = 0
  const state = {
    /** The passwords checked, in the order the checks began. */
    checked: [] as string[],
    /** The most checks that ran at once. */
    most: 0,
    passwords: {
      hash: real.hash,
      async verify(password: string, hash: string) {
        state.checked.push(password)
        state.most = Math.max(state.most, ++running)
        try {
          if (holding) await new Promise<void>((resolve) => waiting.push(resolve))
          return await real.verify(password, hash)
        } finally {
          running--
        }
      },
    } satisfies Passwords,
    /** Checks from now on wait for `letOne` or `letAll`. */
    hold() {
      holding = true
    },
    /** The oldest held check goes on. */
    letOne() {
      waiting.shift()?.()
    },
    /** Every held check goes on, and no more are held. */
    letAll() {
      holding = false
      for (const resolve of waiting.splice(0)) resolve()
    },
    held: () => waiting.length,
  }
  return state
}
