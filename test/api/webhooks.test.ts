import { afterAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { auditEntries, webhookDeliveries, webhookEndpoints, webhookEvents } from '../../db/schema/index.ts'
import type { AppOptions, Service } from '../../src/app.ts'
import { writeExpiryNotices } from '../../src/keys/expiry-notices.ts'
import { pruneWebhookHistory } from '../../src/webhooks/pruning.ts'
import { openDatabase } from '../../db/client.ts'
import { testDatabase, testDatabaseUrl } from '../support/database.ts'
import { admin, call, errorOf, seedBusiness, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'

// docs/webhooks.md: endpoints, events, delivery to the Standard Webhooks specification
// (checked with the `standardwebhooks` package's verifier), retries, the addresses refused,
// and two instances delivering each message once; against real receivers on loopback.

type Mode = 'ok' | 'fail' | 'hang' | 'redirect'

interface Received {
  path: string
  headers: Record<string, string>
  body: string
}

/** A receiver on loopback: answers as its mode says, and keeps what it received. */
function receiver(initial: Mode = 'ok') {
  let mode: Mode = initial
  const received: Received[] = []
  const hanging: (() => void)[] = []
  let base = ''
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request: Request): Promise<Response> {
      received.push({ path: new URL(request.url).pathname, headers: Object.fromEntries(request.headers), body: await request.text() })
      if (mode === 'fail') return new Response('no', { status: 500 })
      if (mode === 'redirect') return new Response(null, { status: 302, headers: { location: `${base}/elsewhere` } })
      if (mode === 'hang') await new Promise<void>((resolve) => hanging.push(resolve))
      return new Response('ok')
    },
  })
  base = `http://127.0.0.1:${server.port}`
  receivers.push(() => {
    for (const release of hanging) release()
    server.stop(true)
  })
  return {
    url: `${base}/hooks`,
    received,
    set: (next: Mode) => void (mode = next),
    stop: () => server.stop(true),
  }
}
const receivers: (() => void)[] = []
afterAll(() => {
  for (const stop of receivers) stop()
})

const FAST = { allowedHosts: ['127.0.0.1'], retryDelaysMs: [30, 30], timeoutMs: 500, everyMs: 3_600_000 }

async function setup(webhooks: AppOptions['webhooks'] = FAST) {
  const service = await testService({ webhooks })
  const businessId = await seedBusiness(service)
  const { db } = await testDatabase()
  return { service, businessId, db }
}

async function addEndpoint(
  service: Service,
  businessId: string,
  url: string,
  events: string[] = ['key.created', 'key.revoked', 'key.rolled'],
) {
  const response = await admin(service, `/businesses/${businessId}/webhooks`, {
    method: 'POST',
    body: { url, events, description: 'ours' },
  })
  expect(response.status).toBe(201)
  return (await response.json()) as { id: string; secret: string; url: string; enabled: boolean }
}

/** Runs the delivery until nothing is due (a retry waits its delay), at most `rounds` times. */
async function deliverAll(service: Service, rounds = 20) {
  for (let i = 0; i < rounds; i++) {
    const run = await service.services.webhookDelivery.run()
    if (run.claimed === 0) {
      const [pending] = await (await testDatabase()).db
        .select({ id: webhookDeliveries.id })
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.status, 'pending'))
        .limit(1)
      if (!pending) return
      await Bun.sleep(40)
    }
  }
}

async function deliveriesOf(service: Service, businessId: string, endpointId: string) {
  const response = await admin(service, `/businesses/${businessId}/webhooks/${endpointId}/deliveries`)
  expect(response.status).toBe(200)
  return (
    (await response.json()) as {
      data: {
        id: string
        eventId: string
        event: string
        status: string
        attempts: number
        lastStatus: number | null
        lastError: string | null
      }[]
    }
  ).data
}

describe('endpoints', () => {
  test('the create answer shows the signing secret once; reads never; the trail records the change without it', async () => {
    const { service, businessId, db } = await setup()
    const hook = receiver()
    const created = await addEndpoint(service, businessId, hook.url)
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32)
    expect(created).toMatchObject({ url: hook.url, enabled: true })
    for (const path of [`/businesses/${businessId}/webhooks`, `/businesses/${businessId}/webhooks/${created.id}`]) {
      const text = await (await admin(service, path)).text()
      expect(text).toContain(created.id)
      expect(text).not.toContain(created.secret.slice(6, 20))
    }
    const [entry] = await db.select().from(auditEntries).where(eq(auditEntries.action, 'webhook.created'))
    expect(entry!.changes).toMatchObject({ endpoint: { to: created.id }, url: { to: hook.url } })
    expect(JSON.stringify(entry)).not.toContain(created.secret.slice(6, 20))
  })

  test('at most 10 a business; PATCH and DELETE are audited; another business cannot see them', async () => {
    const { service, businessId, db } = await setup()
    const hook = receiver()
    const ids: string[] = []
    for (let i = 0; i < 10; i++) ids.push((await addEndpoint(service, businessId, `${hook.url}/${i}`)).id)
    const eleventh = await admin(service, `/businesses/${businessId}/webhooks`, {
      method: 'POST',
      body: { url: hook.url, events: ['key.created'] },
    })
    expect(eleventh.status).toBe(409)
    const patched = await admin(service, `/businesses/${businessId}/webhooks/${ids[0]}`, {
      method: 'PATCH',
      body: { events: ['key.revoked'], enabled: false },
    })
    expect(await patched.json()).toMatchObject({ events: ['key.revoked'], enabled: false })
    expect((await admin(service, `/businesses/${businessId}/webhooks/${ids[1]}`, { method: 'DELETE' })).status).toBe(204)
    const actions = (await db.select().from(auditEntries).where(eq(auditEntries.businessId, businessId))).map((e) => e.action)
    expect(actions.filter((a) => a === 'webhook.created')).toHaveLength(10)
    expect(actions).toContain('webhook.updated')
    expect(actions).toContain('webhook.deleted')
    const other = await seedBusiness(service, 'Other')
    expect((await admin(service, `/businesses/${other}/webhooks/${ids[0]}`)).status).toBe(404)
    expect((await admin(service, `/businesses/${other}/webhooks/${ids[0]}`, { method: 'DELETE' })).status).toBe(404)
    expect(((await (await admin(service, `/businesses/${other}/webhooks`)).json()) as { data: unknown[] }).data).toEqual([])
  })

  const refused: [string, string][] = [
    ['loopback IPv4', 'https://127.0.0.1/hooks'],
    ['loopback IPv6', 'https://[::1]/hooks'],
    ['private 10/8', 'https://10.0.0.1/hooks'],
    ['private 172.16/12', 'https://172.16.5.4/hooks'],
    ['private 192.168/16', 'https://192.168.1.1/hooks'],
    ['carrier-grade NAT', 'https://100.64.0.1/hooks'],
    ['link-local, the metadata service', 'https://169.254.169.254/latest/meta-data'],
    ['IPv6 link-local', 'https://[fe80::1]/hooks'],
    ['IPv6 unique local, AWS metadata', 'https://[fd00:ec2::254]/hooks'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hooks'],
    ['the unspecified address', 'https://0.0.0.0/hooks'],
    ['a name that resolves to loopback', 'https://localhost/hooks'],
    ['a name that resolves to a private address', 'https://internal.example/hooks'],
    ['a name with a public and a private address', 'https://mixed.example/hooks'],
    ['a name that does not resolve', 'https://nowhere.example/hooks'],
    ['http to a host not allowed', 'http://public.example/hooks'],
    ['credentials in the URL', 'https://user:secret@public.example/hooks'],
    ['not a URL', 'hooks please'],
    ['another scheme', 'ftp://public.example/hooks'],
  ]
  test.each(refused)('%s: 400 naming url, nothing stored', async (_, url) => {
    const { service, businessId, db } = await setup({ ...FAST, allowedHosts: [], resolve: fakeDns })
    const response = await admin(service, `/businesses/${businessId}/webhooks`, { method: 'POST', body: { url, events: ['key.created'] } })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.field).toBe('url')
    expect(await db.select().from(webhookEndpoints)).toHaveLength(0)
  })

  test('a public name is accepted; WEBHOOK_ALLOWED_HOSTS lets a listed host through over http', async () => {
    const { service, businessId } = await setup({ ...FAST, allowedHosts: ['localhost'], resolve: fakeDns })
    expect(
      (
        await admin(service, `/businesses/${businessId}/webhooks`, {
          method: 'POST',
          body: { url: 'https://public.example/hooks', events: ['key.created'] },
        })
      ).status,
    ).toBe(201)
    expect(
      (
        await admin(service, `/businesses/${businessId}/webhooks`, {
          method: 'POST',
          body: { url: 'http://localhost:9/hooks', events: ['key.created'] },
        })
      ).status,
    ).toBe(201)
  })
})

/** A stand-in for DNS: names the tests use, nothing sent anywhere. */
const dnsAnswers: Record<string, string[]> = {
  'public.example': ['93.184.215.14'],
  'internal.example': ['10.1.2.3'],
  'mixed.example': ['93.184.215.14', '192.168.0.7'],
  localhost: ['127.0.0.1', '::1'],
}
async function fakeDns(host: string): Promise<string[]> {
  const answer = dnsAnswers[host]
  if (!answer) throw new Error(`ENOTFOUND ${host}`)
  return answer
}

describe('delivery', () => {
  test('key.created arrives signed to the Standard Webhooks specification, without the key', async () => {
    const { service, businessId } = await setup()
    const hook = receiver()
    const endpoint = await addEndpoint(service, businessId, hook.url)
    const { key, record } = await seedKey(service, businessId, { type: 'private', name: 'Billing' })
    await deliverAll(service)
    expect(hook.received).toHaveLength(1)
    const [got] = hook.received
    const verified = new Webhook(endpoint.secret).verify(got!.body, got!.headers) as {
      type: string
      timestamp: string
      data: Record<string, unknown>
    }
    expect(verified.type).toBe('key.created')
    expect(verified.data).toMatchObject({ keyId: record.id, name: 'Billing', type: 'private', keyHint: record.keyHint })
    expect(got!.body).not.toContain(key)
    expect(got!.headers['webhook-signature']).toStartWith('v1,')
    // A body changed on the way fails the verifier: the signature covers it.
    expect(() => new Webhook(endpoint.secret).verify(got!.body.replace('Billing', 'Billinh'), got!.headers)).toThrow()
    const [delivery] = await deliveriesOf(service, businessId, endpoint.id)
    expect(delivery).toMatchObject({
      event: 'key.created',
      status: 'delivered',
      attempts: 1,
      lastStatus: 200,
      eventId: got!.headers['webhook-id'],
    })
  })

  test('a failing receiver is retried with the same webhook-id until it answers 2xx', async () => {
    const { service, businessId } = await setup()
    const hook = receiver('fail')
    const endpoint = await addEndpoint(service, businessId, hook.url)
    await seedKey(service, businessId, { type: 'private' })
    await service.services.webhookDelivery.run()
    await Bun.sleep(40)
    await service.services.webhookDelivery.run()
    hook.set('ok')
    await deliverAll(service)
    expect(hook.received).toHaveLength(3)
    expect(new Set(hook.received.map((r) => r.headers['webhook-id'])).size).toBe(1)
    for (const got of hook.received) expect(() => new Webhook(endpoint.secret).verify(got.body, got.headers)).not.toThrow()
    const [delivery] = await deliveriesOf(service, businessId, endpoint.id)
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 3, lastStatus: 200 })
    // The endpoint's failures ended with the success.
    expect(await (await admin(service, `/businesses/${businessId}/webhooks/${endpoint.id}`)).json()).toMatchObject({ failingSince: null })
  })

  test('after its last retry a delivery has failed; a resend sends it again with the same webhook-id', async () => {
    const { service, businessId } = await setup()
    const hook = receiver('fail')
    const endpoint = await addEndpoint(service, businessId, hook.url)
    await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    const [failed] = await deliveriesOf(service, businessId, endpoint.id)
    expect(failed).toMatchObject({ status: 'failed', attempts: 3, lastStatus: 500, lastError: 'answered 500' })
    expect(hook.received).toHaveLength(3)
    hook.set('ok')
    const resent = await admin(service, `/businesses/${businessId}/webhooks/${endpoint.id}/deliveries/${failed!.id}/resend`, {
      method: 'POST',
    })
    expect(resent.status).toBe(202)
    await deliverAll(service)
    expect(hook.received).toHaveLength(4)
    expect(hook.received[3]!.headers['webhook-id']).toBe(failed!.eventId)
    expect((await deliveriesOf(service, businessId, endpoint.id))[0]).toMatchObject({ status: 'delivered', attempts: 1 })
  })

  test('a receiver that hangs is given up on at the timeout; one that is down, and a redirect, fail without being followed', async () => {
    const { service, businessId } = await setup({ ...FAST, retryDelaysMs: [] })
    const hanging = receiver('hang')
    const down = receiver()
    down.stop()
    const moving = receiver('redirect')
    const ids = [
      (await addEndpoint(service, businessId, hanging.url)).id,
      (await addEndpoint(service, businessId, down.url)).id,
      (await addEndpoint(service, businessId, moving.url)).id,
    ]
    await seedKey(service, businessId, { type: 'private' })
    // The API answers while a delivery hangs.
    const run = service.services.webhookDelivery.run()
    const { key } = await seedKey(service, businessId, { type: 'private', name: 'during' })
    expect((await call(service, '/api/v0/whoami', { key })).status).toBe(200)
    await run
    await deliverAll(service)
    const errors = await Promise.all(
      ids.map(async (id) => (await deliveriesOf(service, businessId, id)).map((d) => [d.status, d.lastError])),
    )
    expect(errors[0]).toContainEqual(['failed', 'no answer within 0.5 s'])
    expect(errors[1]).toContainEqual(['failed', 'could not connect'])
    expect(errors[2]).toContainEqual(['failed', 'redirects are not followed'])
    // The redirect's target was never asked: each of the two events reached the first address only.
    expect(moving.received.map((r) => r.path)).toEqual(['/hooks', '/hooks'])
  })

  test("each endpoint gets the events it takes, and only its own business's", async () => {
    const { service, businessId } = await setup()
    const created = receiver()
    const revoked = receiver()
    const elsewhere = receiver()
    await addEndpoint(service, businessId, created.url, ['key.created'])
    await addEndpoint(service, businessId, revoked.url, ['key.revoked'])
    const other = await seedBusiness(service, 'Other')
    await addEndpoint(service, other, elsewhere.url, ['key.created', 'key.revoked'])
    const { record } = await seedKey(service, businessId, { type: 'private' })
    await service.services.keys.revoke(businessId, record.id, TEST_AUTHOR)
    await deliverAll(service)
    expect(created.received.map((r) => JSON.parse(r.body).type)).toEqual(['key.created'])
    expect(revoked.received.map((r) => JSON.parse(r.body).type)).toEqual(['key.revoked'])
    expect(elsewhere.received).toHaveLength(0)
  })

  test('a test message, a roll, a leak and an erasure each arrive as their event, never holding a key or a person', async () => {
    const { service, businessId } = await setup()
    const hook = receiver()
    const endpoint = await addEndpoint(service, businessId, hook.url, ['key.rolled', 'key.leaked', 'erasure.completed'])
    expect((await admin(service, `/businesses/${businessId}/webhooks/${endpoint.id}/test`, { method: 'POST' })).status).toBe(202)
    const pub = await seedKey(service, businessId, { type: 'public' })
    const rolled = await admin(service, `/keys/${pub.record.id}/roll`, { method: 'POST', body: { graceSeconds: 0 } })
    expect(rolled.status).toBe(201)
    const leaked = await seedKey(service, businessId, { type: 'private' })
    await call(service, '/security/leaked-keys', { method: 'POST', body: { keys: [leaked.key], url: 'https://github.com/x/y' } })
    const erasure = await admin(service, `/businesses/${businessId}/erasures`, { method: 'POST', body: { personId: 'person-42' } })
    expect(erasure.status).toBe(202)
    await service.services.erasures.idle()
    await deliverAll(service)
    const types = hook.received.map((r) => JSON.parse(r.body).type).sort()
    expect(types).toEqual(['erasure.completed', 'key.leaked', 'key.rolled', 'webhook.test'])
    const all = hook.received.map((r) => r.body).join('\n')
    for (const secret of [pub.key, leaked.key, 'person-42', (await rolled.json()).key]) expect(all).not.toContain(secret)
  })

  test('an endpoint failing past the limit is disabled: nothing more is sent until it is enabled again', async () => {
    const { service, businessId } = await setup({ ...FAST, retryDelaysMs: [], disableAfterMs: 1 })
    const hook = receiver('fail')
    const endpoint = await addEndpoint(service, businessId, hook.url)
    await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    await Bun.sleep(5)
    await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    const record = (await (await admin(service, `/businesses/${businessId}/webhooks/${endpoint.id}`)).json()) as {
      enabled: boolean
      disabledAt: string | null
    }
    expect(record.enabled).toBe(false)
    expect(record.disabledAt).not.toBeNull()
    const before = hook.received.length
    await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    expect(hook.received).toHaveLength(before)
    hook.set('ok')
    await admin(service, `/businesses/${businessId}/webhooks/${endpoint.id}`, { method: 'PATCH', body: { enabled: true } })
    await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    expect(hook.received.length).toBe(before + 1)
  })

  test('DNS that moves to a private address after registration: refused at delivery, the receiver never asked', async () => {
    let answer = ['93.184.215.14']
    const { service, businessId } = await setup({ ...FAST, allowedHosts: [], retryDelaysMs: [], resolve: async () => answer })
    const registered = await admin(service, `/businesses/${businessId}/webhooks`, {
      method: 'POST',
      body: { url: 'https://rebind.example/hooks', events: ['key.created'] },
    })
    expect(registered.status).toBe(201)
    const { id } = (await registered.json()) as { id: string }
    answer = ['127.0.0.1']
    await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    const [delivery] = await deliveriesOf(service, businessId, id)
    expect(delivery!.status).toBe('failed')
    expect(delivery!.lastError).toStartWith('refused: rebind.example resolves to 127.0.0.1')
    expect(delivery!.lastStatus).toBeNull()
  })
})

describe('never lost, never twice', () => {
  test('events written while no instance delivers are delivered by the next one to start', async () => {
    const first = await setup()
    const hook = receiver()
    await addEndpoint(first.service, first.businessId, hook.url)
    for (let i = 0; i < 5; i++) await seedKey(first.service, first.businessId, { type: 'private' })
    await first.service.drain()
    expect(hook.received).toHaveLength(0)
    const next = await testService({ webhooks: FAST })
    await deliverAll(next)
    expect(hook.received).toHaveLength(5)
  })

  test('two instances: 1,000 events, each delivered once (0 duplicates, 0 missing)', async () => {
    const { service: a, businessId, db } = await setup({ ...FAST, timeoutMs: 5_000 })
    // On PostgreSQL the second instance has its own pool, as another process would.
    const url = await testDatabaseUrl()
    const own = url ? await openDatabase({ databaseUrl: url, dataDir: 'memory://', maxConnections: 4 }) : undefined
    const b = await testService({ webhooks: { ...FAST, timeoutMs: 5_000 }, ...(own ? { database: own } : {}) })
    const hook = receiver()
    const endpoint = await addEndpoint(a, businessId, hook.url)
    for (let i = 0; i < 1_000; i++) await a.services.webhooks.test(businessId, endpoint.id)
    expect(await db.select({ id: webhookEvents.id }).from(webhookEvents).where(eq(webhookEvents.type, 'webhook.test'))).toHaveLength(1_000)
    const runs = async (service: Service) => {
      for (let i = 0; i < 60; i++) if ((await service.services.webhookDelivery.run()).claimed === 0) return
    }
    await Promise.all([runs(a), runs(b), runs(a), runs(b)])
    const ids = hook.received.map((r) => r.headers['webhook-id'])
    expect(ids).toHaveLength(1_000)
    expect(new Set(ids).size).toBe(1_000)
    const statuses = await db
      .select({ status: webhookDeliveries.status })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.endpointId, endpoint.id)))
    expect(statuses.filter((s) => s.status === 'delivered')).toHaveLength(1_000)
    await b.drain()
    await own?.close()
  }, 120_000)
})

describe('key.expiring', () => {
  test('7 days and 1 day before: each notice told once, whoever runs the round', async () => {
    const { service, businessId, db } = await setup()
    const hook = receiver()
    await addEndpoint(service, businessId, hook.url, ['key.expiring'])
    const expiresAt = new Date(Date.now() + 3 * 86_400_000)
    const { record } = await seedKey(service, businessId, { type: 'private', expiresAt: expiresAt.toISOString() })
    expect(await writeExpiryNotices(db)).toBe(1)
    expect(await writeExpiryNotices(db)).toBe(0)
    expect(await writeExpiryNotices(db, new Date(Date.now() + 86_400_000))).toBe(0)
    expect(await writeExpiryNotices(db, new Date(expiresAt.getTime() - 3_600_000))).toBe(1)
    expect(await writeExpiryNotices(db, new Date(expiresAt.getTime() - 60_000))).toBe(0)
    // Past its expiry: nothing more.
    expect(await writeExpiryNotices(db, new Date(expiresAt.getTime() + 60_000))).toBe(0)
    await deliverAll(service)
    const data = hook.received.map((r) => JSON.parse(r.body) as { type: string; data: { keyId: string; expiresIn: string } })
    expect(data.map((d) => [d.type, d.data.keyId, d.data.expiresIn])).toEqual([
      ['key.expiring', record.id, '7 days'],
      ['key.expiring', record.id, '1 day'],
    ])
  })
})

describe('history', () => {
  test('finished deliveries and their events go after 30 days; pending ones and recent ones stay', async () => {
    const { service, businessId, db } = await setup({ ...FAST, retryDelaysMs: [] })
    const hook = receiver()
    const endpoint = await addEndpoint(service, businessId, hook.url)
    for (let i = 0; i < 3; i++) await seedKey(service, businessId, { type: 'private' })
    await deliverAll(service)
    hook.set('fail')
    await seedKey(service, businessId, { type: 'private' })
    // One still waiting for a retry: a pending delivery is never pruned, however old.
    await db
      .update(webhookDeliveries)
      .set({ status: 'pending', nextAttemptAt: new Date(Date.now() + 86_400_000) })
      .where(eq(webhookDeliveries.attempts, 0))
    const old = new Date(Date.now() - 31 * 86_400_000)
    await db.update(webhookDeliveries).set({ createdAt: old }).where(eq(webhookDeliveries.endpointId, endpoint.id))
    await db.update(webhookEvents).set({ createdAt: old })
    await seedKey(service, businessId, { type: 'private', name: 'recent' })
    const pruned = await pruneWebhookHistory(db)
    expect(pruned).toEqual({ deliveries: 3, events: 3 })
    const left = await db.select({ status: webhookDeliveries.status }).from(webhookDeliveries)
    expect(left.map((d) => d.status).sort()).toEqual(['pending', 'pending'])
    expect(await db.select({ id: webhookEvents.id }).from(webhookEvents)).toHaveLength(2)
  })
})
