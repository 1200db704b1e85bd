import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { sendPageViews } from '../support/load.ts'
import { waitUntil } from '../support/wait.ts'
import { testDatabaseUrl } from '../support/database.ts'
import { startDeployment, type Deployment } from '../../deploy/start.ts'

// deploy/up.sh as an operator runs it: its own redis-server, two instances over one
// PostgreSQL database, HAProxy in front with TRUST_PROXY set for it. Traffic goes through
// the real proxy. It needs PostgreSQL, haproxy and redis-server: it runs in the PostgreSQL
// pass, and CI (which installs them) fails rather than skips without them.
const databaseUrl = await testDatabaseUrl()
const tools = ['haproxy', 'redis-server', 'psql', 'curl']
const missing = tools.filter((tool) => Bun.which(tool) === null)
if (databaseUrl && missing.length > 0 && process.env.CI) {
  throw new Error(`the deployment test needs ${missing.join(', ')} in CI (apt-get install)`)
}
if (databaseUrl && missing.length > 0) console.warn(`  deployment test skipped: ${missing.join(', ')} not installed`)

const ADMIN_TOKEN = 'deploy-test-admin-token-0123456789'
const DATABASE = 'keygate_deploy_test'
const ORIGIN = 'https://shop.example.com'

async function bringUp(): Promise<Deployment> {
  const server = new URL(databaseUrl!)
  server.pathname = ''
  const pg = server.toString().replace(/\/$/, '')
  // A database of its own, fresh each run: dropped first if an earlier run left it.
  const admin = postgres(`${pg}/postgres`, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists ${DATABASE} with (force)`)
  await admin.end()
  return startDeployment({ instances: 2, pgUrl: pg, database: DATABASE, adminToken: ADMIN_TOKEN, timeoutMs: 60_000 })
}

async function call(
  base: string,
  path: string,
  init: { method?: string; key?: string; token?: string; body?: unknown; forwardedFor?: string } = {},
) {
  const headers: Record<string, string> = {}
  if (init.key) headers.authorization = `Bearer ${init.key}`
  if (init.token) headers.authorization = `Bearer ${init.token}`
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  if (init.forwardedFor) headers['x-forwarded-for'] = init.forwardedFor
  if (init.key?.startsWith('pk_')) headers.origin = ORIGIN
  return fetch(base + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
}

describe.if(Boolean(databaseUrl) && missing.length === 0)('a deployment behind HAProxy (deploy/up.sh)', () => {
  let deployment: Deployment
  let businessId: string
  let pageView: { method: string; key: string; body: unknown }

  async function newKey(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const response = await call(deployment.proxy, `/admin/v0/businesses/${businessId}/keys`, {
      token: ADMIN_TOKEN,
      body: { name: 'site', createdBy: 'deploy test', ...body },
    })
    expect(response.status).toBe(201)
    return (await response.json()) as { id: string; key: string }
  }

  const publicKey = (rateLimit?: { limit: number; windowSeconds: number }) =>
    newKey({ type: 'public', scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['shop.example.com'], ...(rateLimit ? { rateLimit } : {}) })

  beforeAll(async () => {
    deployment = await bringUp()
    const response = await call(deployment.proxy, '/admin/v0/businesses', { token: ADMIN_TOKEN, body: { name: 'Deployed' } })
    expect(response.status).toBe(201)
    businessId = ((await response.json()) as { id: string }).id
    pageView = { method: 'POST', key: '', body: { eventType: 'page_view', url: `${ORIGIN}/` } }
  }, 90_000)

  afterAll(async () => {
    await deployment?.stop()
  })

  test('both instances and the proxy are ready', async () => {
    expect(deployment.instances).toHaveLength(2)
    for (const instance of deployment.instances) expect((await fetch(`${instance.url}/readyz`)).status).toBe(200)
    expect((await fetch(`${deployment.proxy}/readyz`)).status).toBe(200)
  })

  test("a public key's budget is per visitor (X-Forwarded-For through the proxy), shared by the instances", async () => {
    const { key } = await publicKey({ limit: 10, windowSeconds: 60 })
    const statuses = async (visitor: string, n: number) => {
      const answers: number[] = []
      for (let i = 0; i < n; i++)
        answers.push((await call(deployment.proxy, '/api/v0/analytics', { ...pageView, key, forwardedFor: visitor })).status)
      return answers
    }
    // The test's own address is loopback, which TRUST_PROXY trusts like the proxy itself:
    // the X-Forwarded-For it sends stands for the visitor's address, as HAProxy's would.
    const first = await statuses('203.0.113.7', 20)
    const accepted = first.filter((status) => status === 202).length
    // Within the limit, plus 10%, plus one per instance.
    expect(accepted).toBeGreaterThanOrEqual(10)
    expect(accepted).toBeLessThanOrEqual(10 + 1 + 2)
    expect(first.filter((status) => status !== 202).every((status) => status === 429)).toBe(true)
    // Another visitor of the same site is not refused for the first one's requests.
    expect(await statuses('198.51.100.9', 3)).toEqual([202, 202, 202])
    console.log(`  visitor one: ${accepted} of 20 accepted across two instances (limit 10)`)
  })

  test('a revocation through one instance is refused through the proxy within the aim (median and worst of 20)', async () => {
    const latencies: number[] = []
    for (let round = 0; round < 20; round++) {
      const { id, key } = await publicKey()
      // Both instances have the key cached (round robin).
      for (let i = 0; i < 4; i++) expect((await call(deployment.proxy, '/api/v0/whoami', { key })).status).toBe(200)
      const revoked = await call(deployment.instances[round % 2]!.url, `/admin/v0/keys/${id}`, { method: 'DELETE', token: ADMIN_TOKEN })
      expect(revoked.status).toBe(204)
      const start = performance.now()
      // Refused by both instances: four refusals in a row through the round-robin proxy.
      let inARow = 0
      let firstOfRow = 0
      while (inARow < 4) {
        const status = (await call(deployment.proxy, '/api/v0/whoami', { key })).status
        if (status === 401) {
          if (inARow++ === 0) firstOfRow = performance.now()
        } else {
          expect(status).toBe(200)
          inARow = 0
        }
        expect(performance.now() - start).toBeLessThan(1_000)
      }
      latencies.push(firstOfRow - start)
    }
    latencies.sort((a, b) => a - b)
    const median = latencies[10]!
    const worst = latencies.at(-1)!
    console.log(`  revocation refused through the proxy: median ${median.toFixed(1)} ms, worst ${worst.toFixed(1)} ms of 20`)
    expect(worst).toBeLessThan(1_000)
  }, 60_000)

  test('an instance killed mid-traffic: the proxy routes around it, no acknowledged event is lost', async () => {
    const { key } = await publicKey({ limit: 1_000_000, windowSeconds: 1 })
    const load = sendPageViews({ base: () => deployment.proxy, key, origin: ORIGIN, concurrency: 16 })
    await waitUntil(() => load.acknowledged.length >= 300, '300 acknowledged events', 20_000)
    const victim = deployment.instances[1]!
    process.kill(victim.pid, 'SIGKILL')
    const atKill = load.acknowledged.length
    // Traffic goes on through the survivor.
    await waitUntil(() => load.acknowledged.length >= atKill + 500, '500 more acknowledged events after the kill', 20_000)
    await load.stop()

    const sql = postgres(`${databaseUrl!.replace(/\/[^/]*$/, '')}/${DATABASE}`, { max: 1, onnotice: () => {} })
    try {
      const rows = await sql<{ anonymous_id: string }[]>`
        select anonymous_id from analytics_events where business_id = ${businessId} and anonymous_id is not null`
      const stored = new Set(rows.map((row) => row.anonymous_id))
      const lost = load.acknowledged.filter((id) => !stored.has(id))
      console.log(
        `  killed one of two instances: ${load.acknowledged.length} acknowledged, ${lost.length} lost, ` +
          `${load.refused.length} refused (${[...new Set(load.refused)].join(', ') || 'none'}), ${load.failures} failed`,
      )
      expect(lost).toEqual([])
    } finally {
      await sql.end()
    }
  }, 60_000)
})
