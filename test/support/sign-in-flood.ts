import { argon2idPasswords, type Passwords } from '../../src/members/passwords.ts'
import { TEST_PASSWORD_COST } from './service.ts'

/**
 * Sign-ins as a browser sends them, against a listening server (in process or a child
 * process) that believes X-Forwarded-For from the test (TRUST_PROXY 127.0.0.1): the form's
 * token and cookie once, then as many posts as asked, all at once.
 */
export async function signInForm(base: string): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${base}/dashboard/sign-in`)
  const page = await response.text()
  const cookie = response.headers
    .getSetCookie()
    .map((header) => header.split(';')[0]!)
    .find((pair) => pair.startsWith('keygate_sign_in='))
  const csrf = /<input type="hidden" name="csrf" value="([^"]*)"/.exec(page)?.[1]
  if (!cookie || !csrf) throw new Error(`no sign-in form at ${base}: ${response.status}`)
  return { cookie, csrf }
}

/** One sign-in from `address`; answers the status (303 signed in, 401 wrong, 429 throttled). */
export async function signInFrom(base: string, form: { cookie: string; csrf: string }, email: string, password: string, address: string) {
  const response = await fetch(`${base}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: base,
      'sec-fetch-site': 'same-origin',
      cookie: form.cookie,
      'x-forwarded-for': address,
    },
    body: new URLSearchParams({ csrf: form.csrf, email, password }).toString(),
    signal: AbortSignal.timeout(30_000),
  })
  await response.arrayBuffer()
  return response.status
}

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
