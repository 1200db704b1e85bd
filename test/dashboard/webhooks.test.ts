import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditEntries, webhookEndpoints } from '../../db/schema/index.ts'
import type { Service } from '../../src/app.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'
import { addMember, getPage, memberOf, postForm, signIn, type Session } from './support.ts'

// docs/webhooks.md in the dashboard: owners add endpoints (the secret shown once), every
// member sees them and their deliveries, sends a test and resends; a disabled endpoint is
// announced on every page.

const WEBHOOKS = '/dashboard/settings/developers/webhooks'
const stops: (() => void)[] = []
afterAll(() => {
  for (const stop of stops) stop()
})

function receiver(status = 200) {
  const received: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request: Request) {
      received.push((JSON.parse(await request.text()) as { type: string }).type)
      return new Response('', { status })
    },
  })
  stops.push(() => server.stop(true))
  return { url: `http://127.0.0.1:${server.port}/hooks`, received }
}

async function setup(webhooks = { allowedHosts: ['127.0.0.1'], everyMs: 3_600_000, retryDelaysMs: [] as number[] }) {
  const service = await testService({ webhooks })
  const { businessId, session } = await memberOf(service)
  return { service, businessId, session }
}

function add(service: Service, session: Session, businessId: string, fields: Record<string, string | string[]>) {
  return postForm(service, WEBHOOKS, { csrf: session.csrf, business: businessId, ...fields }, { cookie: session.cookie })
}

const db = async () => (await testDatabase()).db

describe('the webhooks pages', () => {
  test('an owner adds an endpoint: the secret is shown once, the list and the endpoint page never show it again', async () => {
    const { service, businessId, session } = await setup()
    const hook = receiver()
    const response = await add(service, session, businessId, {
      url: hook.url,
      events: ['key.created', 'key.revoked'],
      description: 'Billing',
    })
    expect(response.status).toBe(200)
    const page = await response.text()
    const secret = /id="secret-value" type="text" readonly value="(whsec_[^"]+)"/.exec(page)?.[1]
    expect(secret).toBeDefined()
    const [row] = await (await db()).select().from(webhookEndpoints)
    expect(row).toMatchObject({ url: hook.url, events: ['key.created', 'key.revoked'], description: 'Billing', secret })
    for (const path of [WEBHOOKS, `${WEBHOOKS}/${row!.id}`]) {
      const shown = await (await getPage(service, path, session)).text()
      expect(shown).toContain(hook.url)
      expect(shown).not.toContain(secret!)
    }
    const [entry] = await (await db()).select().from(auditEntries).where(eq(auditEntries.action, 'webhook.created'))
    expect(entry!.actor).toBe('member:ada@example.com')
  })

  test('a refused address, no event, or a member who is no owner: nothing is added', async () => {
    const { service, businessId, session } = await setup()
    const refused = await add(service, session, businessId, { url: 'https://10.0.0.8/hooks', events: 'key.created' })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain('private')
    const none = await add(service, session, businessId, { url: receiver().url })
    expect(none.status).toBe(400)
    expect(await none.text()).toContain('Choose at least one event')
    await addMember(businessId, { email: 'mo@example.com', role: 'member' })
    const mo = await signIn(service, 'mo@example.com')
    const notOwner = await add(service, mo, businessId, { url: receiver().url, events: 'key.created' })
    expect(notOwner.status).toBe(403)
    expect(await (await db()).select().from(webhookEndpoints)).toHaveLength(0)
  })

  test('deliveries are listed with their event, status, attempts and answer; a test and a resend are sent', async () => {
    const { service, businessId, session } = await setup()
    const hook = receiver()
    await add(service, session, businessId, { url: hook.url, events: 'key.created' })
    const [endpoint] = await (await db()).select().from(webhookEndpoints)
    await seedKey(service, businessId, { type: 'private' })
    const tested = await postForm(
      service,
      `${WEBHOOKS}/${endpoint!.id}/test`,
      { csrf: session.csrf, business: businessId },
      { cookie: session.cookie },
    )
    expect(tested.status).toBe(303)
    await service.services.webhookDelivery.run()
    expect(hook.received.sort()).toEqual(['key.created', 'webhook.test'])
    const page = await (await getPage(service, `${WEBHOOKS}/${endpoint!.id}`, session)).text()
    expect(page).toContain('<code>webhook.test</code>')
    expect(page).toContain('<code>key.created</code>')
    expect(page.match(/Delivered/g)?.length).toBe(2)
    expect(page).toContain('<code>200</code>')
    const deliveryId = /data-delivery="([0-9a-f-]{36})"/.exec(page)![1]!
    const resent = await postForm(
      service,
      `${WEBHOOKS}/${endpoint!.id}/deliveries/${deliveryId}/resend`,
      { csrf: session.csrf, business: businessId },
      { cookie: session.cookie },
    )
    expect(resent.status).toBe(303)
    await service.services.webhookDelivery.run()
    expect(hook.received).toHaveLength(3)
  })

  test('another business sees neither the endpoint nor its deliveries, and cannot act on them', async () => {
    const { service, businessId, session } = await setup()
    await add(service, session, businessId, { url: receiver().url, events: 'key.created' })
    const [endpoint] = await (await db()).select().from(webhookEndpoints)
    const other = await seedBusiness(service, 'Other')
    await addMember(other, { email: 'bo@example.com' })
    const bo = await signIn(service, 'bo@example.com')
    expect((await getPage(service, `${WEBHOOKS}/${endpoint!.id}`, bo)).status).toBe(404)
    expect(await (await getPage(service, WEBHOOKS, bo)).text()).not.toContain(endpoint!.url)
    for (const action of ['test', 'disable', 'delete']) {
      const response = await postForm(
        service,
        `${WEBHOOKS}/${endpoint!.id}/${action}`,
        { csrf: bo.csrf, business: other },
        { cookie: bo.cookie },
      )
      expect(response.status).toBe(404)
    }
    expect(await (await db()).select().from(webhookEndpoints)).toHaveLength(1)
  })

  test('an endpoint disabled after failing is announced on every page until an owner enables it', async () => {
    const { service, businessId, session } = await setup({ allowedHosts: ['127.0.0.1'], everyMs: 3_600_000, retryDelaysMs: [] })
    const hook = receiver(500)
    await add(service, session, businessId, { url: hook.url, events: 'key.created' })
    const [endpoint] = await (await db()).select().from(webhookEndpoints)
    // Failing for longer than 5 days: its first failure is moved back.
    await seedKey(service, businessId, { type: 'private' })
    await service.services.webhookDelivery.run()
    await (await db())
      .update(webhookEndpoints)
      .set({ failingSince: new Date(Date.now() - 6 * 86_400_000) })
      .where(eq(webhookEndpoints.id, endpoint!.id))
    await seedKey(service, businessId, { type: 'private' })
    await service.services.webhookDelivery.run()
    for (const path of ['/dashboard/events', '/dashboard/settings/developers/api-keys', WEBHOOKS]) {
      expect(await (await getPage(service, path, session)).text()).toContain('id="webhooks-disabled"')
    }
    const enabled = await postForm(
      service,
      `${WEBHOOKS}/${endpoint!.id}/enable`,
      { csrf: session.csrf, business: businessId },
      { cookie: session.cookie },
    )
    expect(enabled.status).toBe(303)
    expect(await (await getPage(service, WEBHOOKS, session)).text()).not.toContain('id="webhooks-disabled"')
  })
})
