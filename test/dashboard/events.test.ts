import { describe, expect, test } from 'bun:test'
import type { Service } from '../../src/app.ts'
import { call, seedKey, testService } from '../support/service.ts'
import { getPage, KEYS, memberOf, type Session } from './support.ts'

// Issue 33 item 2: the business's events in the dashboard, live.
const EVENTS = '/dashboard/events'

interface LiveAnswer {
  data: { id: string; eventType: string; keyId: string; origin: string | null; properties: Record<string, unknown> }[]
  more: boolean
  newest: string
  html: string
}

async function track(service: Service, key: string, events: Record<string, unknown>[], origin = 'https://example.com') {
  const response = await call(service, '/api/v0/analytics', { key, origin, body: { events } })
  expect(response.status).toBe(202)
}

/** The events a page lists, by id, in the order shown. */
function shownIds(page: string): string[] {
  return [...page.matchAll(/<li class="event" data-event-id="([0-9a-f-]+)">/g)].map((m) => m[1]!)
}

function liveOf(page: string): { url: string; since: string } | null {
  const match = /data-events-live="([^"]+)" data-since="([^"]+)"/.exec(page)
  return match ? { url: match[1]!.replaceAll('&amp;', '&'), since: match[2]! } : null
}

async function live(service: Service, session: Session, page: string): Promise<LiveAnswer> {
  const { url, since } = liveOf(page)!
  const response = await getPage(service, `${url}&since=${since}`, session)
  expect(response.status).toBe(200)
  return (await response.json()) as LiveAnswer
}

const at = (minute: number) => `2026-05-01T10:${String(minute).padStart(2, '0')}:00.000Z`
/** `minutes` from now: the live view shows what arrives dated within the hour before. */
const fromNow = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString()

describe('the events page', () => {
  test("lists the business's events newest first, with type, time, key, origin, ids, page and properties", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId, { name: 'Marketing site' })
    await track(service, site.key, [
      { eventType: 'page_view', url: 'https://example.com/pricing', anonymousId: 'anon-1', timestamp: at(1) },
      { eventType: 'signup', personId: 'user-42', properties: { plan: 'pro', seats: 3 }, timestamp: at(2) },
    ])
    const response = await getPage(service, EVENTS, session)
    expect(response.status).toBe(200)
    const page = await response.text()
    expect(page).toContain('<h1>Events of Acme</h1>')
    const [signup, view] = page.split('<li class="event"').slice(1)
    expect(signup).toContain('<code class="event-type">signup</code>')
    expect(signup).toContain('2026-05-01 10:02:00 UTC')
    expect(signup).toContain('Marketing site</a>')
    expect(signup).toContain('<code>https://example.com</code>')
    expect(signup).toContain('<dt>Person id</dt><dd><code>user-42</code></dd>')
    expect(signup).toContain('&quot;plan&quot;: &quot;pro&quot;')
    expect(view).toContain('<dt>URL</dt><dd class="wrap"><code>https://example.com/pricing</code></dd>')
    expect(view).toContain('<dt>Anonymous id</dt><dd><code>anon-1</code></dd>')
    expect(view).toMatch(/<dt>Event id<\/dt><dd><code>[0-9a-f-]{36}<\/code><\/dd>/)
    expect(page).toContain('aria-current="page">Events</a>')
  })

  test("another business's events never appear, not even under its key's id", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const mine = await seedKey(service, businessId, { name: 'Mine' })
    const { businessId: rivalId } = await memberOf(service, 'Rival', 'rex@rival.example')
    const theirs = await seedKey(service, rivalId, { name: 'Theirs' })
    await track(service, mine.key, [{ eventType: 'page_view', timestamp: at(1) }])
    await track(service, theirs.key, [{ eventType: 'rival_secret', properties: { secret: 'rival plans' }, timestamp: at(2) }])

    const page = await (await getPage(service, EVENTS, session)).text()
    expect(shownIds(page)).toHaveLength(1)
    expect(page).not.toContain('rival_secret')
    const filtered = await getPage(service, `${EVENTS}?key=${theirs.record.id}`, session)
    expect(filtered.status).toBe(400)
    const refusedPage = await filtered.text()
    expect(refusedPage).toContain('That key is not one of this business&#39;s keys')
    expect(refusedPage).not.toContain('rival plans')
    // The live view, asked from the very start, holds only the business's own event too.
    const answer = await live(service, session, page.replace(/data-since="[^"]+"/, `data-since="${sinceStart()}"`))
    expect(answer.data.map((e) => e.eventType)).toEqual(['page_view'])
    expect(answer.html).not.toContain('rival')
    const forged = await getPage(service, `${EVENTS}/live?key=${theirs.record.id}&since=${sinceStart()}`, session)
    expect(forged.status).toBe(400)
    expect(JSON.stringify(await forged.json())).not.toContain('rival plans')
  })

  test('filters by key, event type and time; the filters stay in the form', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const shop = await seedKey(service, businessId, { name: 'Shop' })
    const blog = await seedKey(service, businessId, { name: 'Blog' })
    await track(service, shop.key, [
      { eventType: 'page_view', timestamp: at(1) },
      { eventType: 'purchase', timestamp: at(2) },
      { eventType: 'page_view', timestamp: at(3) },
    ])
    await track(service, blog.key, [{ eventType: 'page_view', timestamp: at(4) }])
    const types = async (query: string) => {
      const page = await (await getPage(service, `${EVENTS}?${query}`, session)).text()
      return [...page.matchAll(/<time datetime="([^"]+)"[^>]*>[^<]*<\/time>\s*<code class="event-type">([^<]+)<\/code>/g)].map(
        (m) => `${m[2]}@${m[1]!.slice(14, 16)}`,
      )
    }
    expect(await types(`key=${shop.record.id}`)).toEqual(['page_view@03', 'purchase@02', 'page_view@01'])
    expect(await types('type=page_view')).toEqual(['page_view@04', 'page_view@03', 'page_view@01'])
    // From and Before are typed as UTC (a space or a T between date and time); Before is exclusive.
    expect(await types('from=2026-05-01T10:02&to=2026-05-01T10:04')).toEqual(['page_view@03', 'purchase@02'])
    expect(await types('from=2026-05-01%2010:02&to=2026-05-01%2010:04:00')).toEqual(['page_view@03', 'purchase@02'])
    expect(await types(`key=${blog.record.id}&type=purchase`)).toEqual([])
    const page = await (await getPage(service, `${EVENTS}?type=purchase&key=${shop.record.id}`, session)).text()
    expect(page).toContain('name="type" type="text" value="purchase"')
    expect(page).toContain(`<option value="${shop.record.id}" selected>`)
  })

  test('bad filters answer 400 with the reasons, and list nothing', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    await track(service, site.key, [{ eventType: 'page_view', timestamp: at(1) }])
    for (const [query, reason] of [
      ['type=no%20spaces', 'is no event type'],
      ['from=yesterday', 'is not a date and time'],
      ['from=2026-05-01T10:05&to=2026-05-01T10:00', '&quot;Before&quot; must be later than &quot;From&quot;'],
      ['key=not-a-key', 'That key is not one of this business&#39;s keys'],
    ] as const) {
      const response = await getPage(service, `${EVENTS}?${query}`, session)
      expect(response.status).toBe(400)
      const page = await response.text()
      expect(page).toContain(reason)
      expect(shownIds(page)).toEqual([])
      expect(liveOf(page)).toBeNull()
    }
  })

  test('pages of 50, newest first; Older keeps the filters, and no event shows twice', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    const other = await seedKey(service, businessId)
    const events = Array.from({ length: 60 }, (_, i) => ({
      eventType: 'page_view',
      timestamp: new Date(Date.parse(at(0)) + i * 1000).toISOString(),
    }))
    await track(service, site.key, events)
    await track(service, other.key, [{ eventType: 'page_view', timestamp: at(30) }])
    const first = await (await getPage(service, `${EVENTS}?key=${site.record.id}`, session)).text()
    expect(shownIds(first)).toHaveLength(50)
    const older = /href="(\/dashboard\/events\?key=[^"]+&amp;cursor=[^"]+)">Older</.exec(first)![1]!.replaceAll('&amp;', '&')
    const second = await (await getPage(service, older, session)).text()
    expect(shownIds(second)).toHaveLength(10)
    expect(new Set([...shownIds(first), ...shownIds(second)]).size).toBe(60)
    expect(second).not.toContain('>Older<')
    // An older page is not live; the newest is.
    expect(liveOf(second)).toBeNull()
    expect(liveOf(first)).not.toBeNull()
    expect(liveOf(await (await getPage(service, `${EVENTS}?to=2026-05-01T11:00`, session)).text())).toBeNull()
  })

  test('the live helper answers what was tracked after the page, newest first, then nothing new', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    await track(service, site.key, [{ eventType: 'page_view', timestamp: at(1) }])
    const page = await (await getPage(service, `${EVENTS}?type=signup`, session)).text()
    expect(shownIds(page)).toEqual([])
    expect(page).toContain('No events match these filters. They appear here as they arrive.')
    await track(service, site.key, [
      { eventType: 'signup', personId: 'p1', timestamp: fromNow(-3) },
      { eventType: 'page_view', timestamp: fromNow(-2) },
      { eventType: 'signup', personId: 'p2', timestamp: fromNow(-1) },
    ])
    const answer = await live(service, session, page)
    expect(answer.data.map((e) => e.eventType)).toEqual(['signup', 'signup'])
    expect(answer.more).toBe(false)
    expect(shownIds(answer.html)).toEqual(answer.data.map((e) => e.id))
    // Asked again from the newest it gave, nothing is new.
    const again = await getPage(service, `${liveOf(page)!.url}&since=${answer.newest}`, session)
    expect(((await again.json()) as LiveAnswer).data).toEqual([])
  })

  test('the live helper answers at most 50 at a time and says more arrived', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    const page = await (await getPage(service, EVENTS, session)).text()
    expect(page).toContain('No events yet.')
    await track(
      service,
      site.key,
      Array.from({ length: 55 }, (_, i) => ({ eventType: 'page_view', timestamp: new Date(Date.now() - 60_000 + i * 1000).toISOString() })),
    )
    const answer = await live(service, session, page)
    expect(answer.data).toHaveLength(50)
    expect(answer.more).toBe(true)
    expect(answer.data[0]!.id).not.toBe(answer.data[49]!.id)
  })

  test('the live view follows arrivals: an event dated 23 h ahead hides no event that arrives after it', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    // Already on the page when it is loaded: dated ahead, so it tops the newest-first list.
    await track(service, site.key, [{ eventType: 'ahead_early', timestamp: fromNow(23 * 60) }])
    const page = await (await getPage(service, EVENTS, session)).text()
    await track(service, site.key, [{ eventType: 'ahead', timestamp: fromNow(23 * 60) }])
    const first = await live(service, session, page)
    expect(first.data.map((e) => e.eventType)).toEqual(['ahead'])
    // Then a normal event: dated now, long before the one ahead, but it arrived later.
    await track(service, site.key, [{ eventType: 'normal', timestamp: fromNow(0) }])
    const second = (await (await getPage(service, `${liveOf(page)!.url}&since=${first.newest}`, session)).json()) as LiveAnswer
    expect(second.data.map((e) => e.eventType)).toEqual(['normal'])
    // Without a timestamp (the service's receive time) too, and nothing twice.
    await track(service, site.key, [{ eventType: 'untimed' }])
    const third = (await (await getPage(service, `${liveOf(page)!.url}&since=${second.newest}`, session)).json()) as LiveAnswer
    expect(third.data.map((e) => e.eventType)).toEqual(['untimed'])
    const none = (await (await getPage(service, `${liveOf(page)!.url}&since=${third.newest}`, session)).json()) as LiveAnswer
    expect(none.data).toEqual([])
  })

  test('the live view starts after what the page shows: nothing already listed comes again', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    await track(service, site.key, [{ eventType: 'listed', timestamp: fromNow(23 * 60) }, { eventType: 'listed_too' }])
    const page = await (await getPage(service, EVENTS, session)).text()
    expect(shownIds(page)).toHaveLength(2)
    expect((await live(service, session, page)).data).toEqual([])
    await track(service, site.key, [{ eventType: 'after_page' }])
    expect((await live(service, session, page)).data.map((e) => e.eventType)).toEqual(['after_page'])
  })

  test('the live helper refuses visitors (401) and a page of the business no longer shown (409)', async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const page = await (await getPage(service, EVENTS, session)).text()
    const { url, since } = liveOf(page)!
    expect(url).toContain(`business=${businessId}`)
    const visitor = await getPage(service, `${url}&since=${since}`)
    expect(visitor.status).toBe(401)
    expect(await visitor.json()).toMatchObject({ error: { code: 'unauthorized' } })
    const otherTab = await getPage(service, `${url.replace(businessId, crypto.randomUUID())}&since=${since}`, session)
    expect(otherTab.status).toBe(409)
    expect(await otherTab.json()).toMatchObject({ error: { code: 'conflict' } })
  })

  test("a new key's waiting panel and a key's details lead to its events", async () => {
    const service = await testService()
    const { businessId, session } = await memberOf(service)
    const site = await seedKey(service, businessId)
    const page = await (await getPage(service, `${KEYS}/${site.record.id}`, session)).text()
    const panel = page.slice(page.indexOf('id="first-request"'))
    expect(panel.slice(0, panel.indexOf('</div>'))).toContain(
      `<a href="${EVENTS}?key=${site.record.id}">Watch this key's events arrive live</a>`,
    )
    expect(page).toContain(`<dt>Events</dt><dd><a href="${EVENTS}?key=${site.record.id}">`)
  })

  test('visitors are sent to sign in', async () => {
    const service = await testService()
    const response = await getPage(service, EVENTS)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe('/dashboard/sign-in?next=%2Fdashboard%2Fevents')
  })
})

/** The position before every event (the page's own when it shows none). */
function sinceStart(): string {
  return Buffer.from(JSON.stringify(['1970-01-01T00:00:00.000Z', '00000000-0000-0000-0000-000000000000'])).toString('base64url')
}
