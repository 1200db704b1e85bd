/**
 * `bun bench/invalidation.ts`: how long a revocation made through one instance takes to be
 * refused by another, over one PostgreSQL (the service promises 1 s; the
 * aim is 100 ms).
 *
 * Starts two instances (`bun src/index.ts`, as deployed, each with its own notification
 * connection), makes one business through the first, then 20 times: a key is created
 * through the first, used once on the second (so it is cached there, for the long TTL),
 * revoked through the first (DELETE /admin/v0/keys/:id), and the second is asked in a
 * loop, one request after the other, until it answers 401 `invalid_api_key`. Measured
 * from the moment the DELETE was answered (the revocation is committed) to the first
 * refusal (so a figure is at least one request's round trip: the first request sent
 * after the DELETE was answered may already be refused); printed as median and worst of
 * 20, with the count of requests still accepted after the revocation was answered.
 *
 * DATABASE_URL: the PostgreSQL to use (default postgres://postgres@127.0.0.1:5432/bench,
 * created when missing). See bench/README.md.
 */
import { cpus, loadavg } from 'node:os'
import { databaseUrl, ensureDatabase, runBenchmark, startService } from './support.ts'

const REVOCATIONS = 20
const ORIGIN = 'https://www.example.com'
/** Give up on one revocation after this long: it would mean invalidation is broken. */
const GIVE_UP_MS = 5_000

async function main(): Promise<number> {
  await ensureDatabase(databaseUrl)
  const [first, second] = [await startService(), await startService()]
  // Both instances log "key change notifications live" once listening; give them a moment to.
  await Bun.sleep(500)
  console.log(
    [
      `date: ${new Date().toISOString()}`,
      `bun ${Bun.version}; cpu: ${cpus()[0]?.model ?? 'unknown'} x${cpus().length}; load average at start: ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
      `two instances over ${new URL(databaseUrl).host}; ${REVOCATIONS} revocations through the first, polled on the second`,
    ].join('\n'),
  )
  const businessId = await first.admin.createBusiness('bench invalidation')
  const headers = (key: string) => ({ authorization: `Bearer ${key}`, origin: ORIGIN })
  const timings: number[] = []
  const polls: number[] = []

  for (let round = 1; round <= REVOCATIONS; round++) {
    const key = await first.admin.createKey(businessId, `revoked ${round}`)
    const use = await fetch(`${second.base}/api/v0/whoami`, { headers: headers(key) })
    if (use.status !== 200) throw new Error(`the new key answered ${use.status} on the second instance`)
    // The second instance now holds the key in its cache.
    const cached = await fetch(`${second.base}/api/v0/whoami`, { headers: headers(key) })
    if (cached.status !== 200) throw new Error(`the cached key answered ${cached.status}`)
    const id = await keyId(second.base, key)

    const revoke = await first.admin.request('DELETE', `/keys/${id}`)
    if (revoke.status !== 204) throw new Error(`DELETE /admin/v0/keys/${id} answered ${revoke.status}`)
    const committed = performance.now()
    let requests = 0
    for (;;) {
      const answer = await fetch(`${second.base}/api/v0/whoami`, { headers: headers(key) })
      requests++
      const body = await answer.text()
      if (answer.status === 401 && body.includes('invalid_api_key')) break
      if (answer.status !== 200) throw new Error(`the second instance answered ${answer.status}: ${body}`)
      if (performance.now() - committed > GIVE_UP_MS) throw new Error(`still accepted ${GIVE_UP_MS} ms after the revocation`)
    }
    const ms = performance.now() - committed
    timings.push(ms)
    polls.push(requests)
    console.log(`  ${round}/${REVOCATIONS}: refused by the second instance ${ms.toFixed(1)} ms after the revocation (${requests} requests)`)
  }

  const sorted = [...timings].sort((a, b) => a - b)
  const median = (sorted[9]! + sorted[10]!) / 2
  console.log(
    `\nrevocation refused on the other instance: median ${median.toFixed(1)} ms, worst ${sorted.at(-1)!.toFixed(1)} ms ` +
      `(best ${sorted[0]!.toFixed(1)} ms) over ${REVOCATIONS}; ` +
      `accepted after the revocation was answered: ${polls.reduce((n, p) => n + p - 1, 0)} requests`,
  )
  return 0
}

/** The key's id, from whoami's answer. */
async function keyId(base: string, key: string): Promise<string> {
  const answer = (await (await fetch(`${base}/api/v0/whoami`, { headers: { authorization: `Bearer ${key}`, origin: ORIGIN } })).json()) as {
    keyId?: string
  }
  if (typeof answer.keyId !== 'string') throw new Error('whoami answered no keyId')
  return answer.keyId
}

await runBenchmark(main)
