/**
 * `bun bench/erasure-flood.ts`: does one business's flood of erasure requests delay another's?
 *
 * Two businesses on the real service (PostgreSQL): the flooder holds FLOODER_EVENTS events,
 * the shop SHOP_EVENTS. First the shop's erasure alone is timed from its 202 to `done`
 * (its quiet time). Then 16 loops post erasures of random people with the flooder's
 * private key for FLOOD_SECONDS; 5 s in, the shop asks for another erasure, timed the same
 * way (at most WAIT_SECONDS). Prints the flooder's answers by status and the shop's two
 * times, for this tree and each of COMPARE_TREES (checkouts measured the same way, in turn).
 *
 * Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench, created when
 * missing; each tree gets a database of its own beside it), FLOOD_SECONDS (default 20),
 * FLOODER_EVENTS (default 200000), SHOP_EVENTS (default 50000), WAIT_SECONDS (default 300).
 */
import { cpus, loadavg } from 'node:os'
import postgres from 'postgres'
import { databaseUrl, ensureDatabase, root, runBenchmark, startService } from './support.ts'

const FLOOD_SECONDS = Number(process.env.FLOOD_SECONDS || 20)
const FLOODER_EVENTS = Number(process.env.FLOODER_EVENTS || 200_000)
const SHOP_EVENTS = Number(process.env.SHOP_EVENTS || 50_000)
const WAIT_SECONDS = Number(process.env.WAIT_SECONDS || 300)
const LOOPS = 16
const TREES = [root, ...(process.env.COMPARE_TREES ?? '').split(',').filter((tree) => tree !== '')]

/** Each tree on a database of its own: an older tree must not meet a newer one's migrations. */
function databaseOf(tree: string): string {
  if (tree === root) return databaseUrl
  const url = new URL(databaseUrl)
  url.pathname = `${url.pathname}_${Bun.hash(tree).toString(36)}`
  return url.toString()
}

/** `count` events of `businessId` over the last 30 days; every 100th of them a person's of `people`. */
async function fill(database: string, businessId: string, count: number, people: number): Promise<void> {
  const sql = postgres(database, { max: 1, onnotice: () => {} })
  try {
    for (let from = 0; from < count; from += 50_000) {
      const to = Math.min(from + 50_000, count) - 1
      await sql`
        insert into analytics_events (id, business_id, key_id, event_type, url, anonymous_id, person_id, occurred_at, received_at)
        select gen_random_uuid(), ${businessId}::uuid, gen_random_uuid(), 'page_view', 'https://www.example.com/',
          'anon-' || (i % 5000), 'person-' || (i % ${people}), now() - make_interval(secs => (i::float8 / ${count}) * 30 * 86400),
          now() - make_interval(secs => (i::float8 / ${count}) * 30 * 86400)
        from generate_series(${from}::int, ${to}::int) as i`
    }
    await sql`analyze analytics_events`
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** Asks for a person's erasure with `key` and answers the milliseconds until it is done (or null past the wait). */
async function timeErasure(base: string, key: string, personId: string): Promise<number | null> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const started = performance.now()
  const asked = await fetch(`${base}/api/v0/analytics/erasures`, { method: 'POST', headers, body: JSON.stringify({ personId }) })
  if (asked.status !== 202) throw new Error(`the shop's erasure answered ${asked.status}: ${await asked.text()}`)
  const { id } = (await asked.json()) as { id: string }
  while (performance.now() - started < WAIT_SECONDS * 1000) {
    const state = (await (await fetch(`${base}/api/v0/analytics/erasures/${id}`, { headers })).json()) as { status: string }
    if (state.status === 'done') return performance.now() - started
    await Bun.sleep(100)
  }
  return null
}

async function runTree(tree: string) {
  const database = databaseOf(tree)
  await ensureDatabase(database)
  const service = await startService({ cwd: tree, env: { DATABASE_URL: database } })
  try {
    const runId = crypto.randomUUID().slice(0, 8)
    const flooder = await service.admin.createBusiness(`flooder ${runId}`)
    const shop = await service.admin.createBusiness(`shop ${runId}`)
    const privateKey = { type: 'private', allowedOrigins: [], scopes: ['ANALYTICS_WRITE'] }
    const flooderKey = await service.admin.createKey(flooder, 'flooder', privateKey)
    const shopKey = await service.admin.createKey(shop, 'shop', privateKey)
    await fill(database, flooder, FLOODER_EVENTS, 20_000)
    await fill(database, shop, SHOP_EVENTS, 500)

    const quietMs = await timeErasure(service.base, shopKey, 'person-1')

    const answers = new Map<string, number>()
    const until = performance.now() + FLOOD_SECONDS * 1000
    const loops = Array.from({ length: LOOPS }, async () => {
      while (performance.now() < until) {
        const status = await fetch(`${service.base}/api/v0/analytics/erasures`, {
          method: 'POST',
          headers: { authorization: `Bearer ${flooderKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ personId: `person-${Math.floor(Math.random() * 20_000)}` }),
          signal: AbortSignal.timeout(30_000),
        })
          .then(async (response) => {
            await response.arrayBuffer()
            return String(response.status)
          })
          .catch((error: Error) => error.name)
        answers.set(status, (answers.get(status) ?? 0) + 1)
      }
    })
    await Bun.sleep(5_000)
    const floodedMs = await timeErasure(service.base, shopKey, 'person-2')
    await Promise.all(loops)
    return { tree, quietMs, floodedMs, answers: [...answers].map(([status, n]) => `${status}=${n}`).join(' ') }
  } finally {
    service.process.kill()
    await service.process.exited
  }
}

const seconds = (ms: number | null) => (ms === null ? `> ${WAIT_SECONDS} s` : `${(ms / 1000).toFixed(1)} s`)

await runBenchmark(async () => {
  await ensureDatabase(databaseUrl)
  console.log(
    `erasure flood: bun ${Bun.version}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; flooder ${FLOODER_EVENTS} events, shop ${SHOP_EVENTS}, ${LOOPS} loops for ${FLOOD_SECONDS} s`,
  )
  for (const tree of TREES) {
    const run = await runTree(tree)
    console.log(
      `${run.tree}: shop's erasure quiet ${seconds(run.quietMs)}, during the flood ${seconds(run.floodedMs)}; flooder's answers ${run.answers}`,
    )
  }
  return 0
})
