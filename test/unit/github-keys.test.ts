import { afterAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign } from 'node:crypto'
import { createSecretScanningKeys, KEYS_CACHE_MS } from '../../src/leaks/github-keys.ts'

// GitHub's secret-scanning keys fetched from a URL (a server on loopback standing in for
// api.github.com): kept an hour, the last good copy used when a fetch fails, fetched again
// for an identifier the copy lacks.

function pair() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  return { privateKey, pem: publicKey.export({ type: 'spki', format: 'pem' }).toString() }
}
const first = pair()
const second = pair()

let published: { key_identifier: string; key: string; is_current: boolean }[] = [
  { key_identifier: 'one', key: first.pem, is_current: true },
]
let answer: 'keys' | 'error' | 'hang' = 'keys'
let fetches = 0
const github = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch() {
    fetches++
    if (answer === 'error') return new Response('unavailable', { status: 503 })
    if (answer === 'hang') await Bun.sleep(10_000)
    return Response.json({ public_keys: published })
  },
})
afterAll(() => github.stop(true))

const body = Buffer.from('[{"token":"sk_x","type":"t","url":"u","source":"content"}]')
const signatureBy = (key: typeof first) => sign('sha256', body, { key: key.privateKey, dsaEncoding: 'der' }).toString('base64')

function keysAt(clock: { now: number }) {
  const failures: unknown[] = []
  const keys = createSecretScanningKeys({
    url: `http://127.0.0.1:${github.port}/keys`,
    now: () => clock.now,
    onFetchFailure: (e) => failures.push(e),
  })
  return { keys, failures }
}

describe('GitHub secret-scanning keys, fetched', () => {
  test('fetched once and kept an hour; a failed fetch keeps the last good copy; then fetched again', async () => {
    published = [{ key_identifier: 'one', key: first.pem, is_current: true }]
    answer = 'keys'
    fetches = 0
    const clock = { now: 1_000_000 }
    const { keys, failures } = keysAt(clock)
    expect(await keys.verify(body, 'one', signatureBy(first))).toBe(true)
    expect(await keys.verify(body, 'one', signatureBy(second))).toBe(false)
    expect(fetches).toBe(1)
    clock.now += KEYS_CACHE_MS - 1
    expect(await keys.verify(body, 'one', signatureBy(first))).toBe(true)
    expect(fetches).toBe(1)
    // An hour on, GitHub is down: the last good copy still verifies, and the failure is told.
    answer = 'error'
    clock.now += 1
    expect(await keys.verify(body, 'one', signatureBy(first))).toBe(true)
    expect(fetches).toBe(2)
    expect(failures).toHaveLength(1)
    // While it is down, reports do not fetch each: once a minute at most.
    clock.now += 30_000
    expect(await keys.verify(body, 'one', signatureBy(first))).toBe(true)
    expect(fetches).toBe(2)
    // GitHub is back with a rotated key: the next fetch (a minute after the failed one) finds it.
    answer = 'keys'
    published = [{ key_identifier: 'two', key: second.pem, is_current: true }]
    clock.now += 30_000
    expect(await keys.verify(body, 'two', signatureBy(second))).toBe(true)
    expect(fetches).toBe(3)
    expect(await keys.verify(body, 'one', signatureBy(first))).toBe(false)
  })

  test('an identifier the copy lacks is fetched again at once, but at most once a minute', async () => {
    published = [{ key_identifier: 'one', key: first.pem, is_current: true }]
    answer = 'keys'
    fetches = 0
    const clock = { now: 5_000_000 }
    const { keys } = keysAt(clock)
    expect(await keys.verify(body, 'one', signatureBy(first))).toBe(true)
    published = [...published, { key_identifier: 'two', key: second.pem, is_current: true }]
    clock.now += 60_000
    expect(await keys.verify(body, 'two', signatureBy(second))).toBe(true)
    expect(fetches).toBe(2)
    // Unknown identifiers do not make a fetch each: a forger cannot make the service hammer GitHub.
    for (let i = 0; i < 20; i++) expect(await keys.verify(body, `forged-${i}`, signatureBy(second))).toBe(false)
    expect(fetches).toBe(2)
  })

  test('concurrent reports share one fetch; no copy at all and GitHub down: every signature refused', async () => {
    published = [{ key_identifier: 'one', key: first.pem, is_current: true }]
    answer = 'keys'
    fetches = 0
    const { keys } = keysAt({ now: 9_000_000 })
    const verdicts = await Promise.all(Array.from({ length: 10 }, () => keys.verify(body, 'one', signatureBy(first))))
    expect(verdicts).toEqual(Array(10).fill(true))
    expect(fetches).toBe(1)
    answer = 'error'
    const { keys: fresh, failures } = keysAt({ now: 9_000_000 })
    expect(await fresh.verify(body, 'one', signatureBy(first))).toBe(false)
    expect(failures).toHaveLength(1)
  })
})
