import type { EventRecord } from '../events/read.ts'
import type { KeyRecord } from '../keys/service.ts'
import { formatInstant, relativeTime } from './format.ts'
import { html, type Html } from './html.ts'
import { keyPath } from './key-views/parts.ts'
import type { SignedIn } from './sessions.ts'
import { EVENTS_PATH, layout } from './views.ts'

/** The filters of the events page as typed (kept in the form), and the problems they have. */
export interface EventFilterValues {
  key: string
  type: string
  from: string
  to: string
}

export interface EventsView {
  filters: EventFilterValues
  problems: string[]
  keys: KeyRecord[]
  events: EventRecord[]
  now: Date
  /** The cursor of the next (older) page, and whether this is the newest page. */
  older: string | null
  first: boolean
  /** Where the live view asks for newer events; null when the page is not live (older pages, a `to`). */
  live: { url: string; since: string } | null
}

/** The query string of the filters (without empty ones), plus `extra`. */
export function filterQuery(filters: EventFilterValues, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries({ ...filters, ...extra })) if (value !== '') query.set(name, value)
  const text = query.toString()
  return text ? `?${text}` : ''
}

/**
 * Events, newest first: like a debugger of the business's traffic. Each event shows its
 * type, time, key, origin, ids, page and properties; a live view adds newer ones at the top.
 */
export function eventsPage(who: SignedIn, view: EventsView): Html {
  const byId = new Map(view.keys.map((k) => [k.id, k]))
  const key = view.filters.key ? byId.get(view.filters.key) : undefined
  return layout({
    title: `Events of ${who.businessName}`,
    who,
    crumbs: [{ label: 'Events', href: EVENTS_PATH }],
    content: html`<h1>Events of ${who.businessName}</h1>
<p class="lead">What your pages and servers tracked, newest first${key ? html`, sent with <a href="${keyPath(key.id)}">${key.name}</a>` : null}.
Times are UTC; open an event for its ids, page and properties. Read them over the API with a private key: <code>GET /api/v0/analytics</code>.</p>
${filterForm(view)}
${
  view.problems.length > 0
    ? html`<div class="alert error" role="alert" id="filter-problems" tabindex="-1"><h2>These filters cannot be used</h2><ul>${view.problems.map((p) => html`<li>${p}</li>`)}</ul></div>`
    : null
}
${
  view.live
    ? html`<p class="live-status" id="live-status" role="status" aria-live="polite" data-events-live="${view.live.url}" data-since="${view.live.since}" data-business="${who.businessId}">
  <span class="pulse" aria-hidden="true"></span> <span class="text">Reload to see new events.</span></p>`
    : null
}
${
  view.events.length > 0 || view.live
    ? html`<div class="event-row events-head" aria-hidden="true"><span>Time (UTC)</span><span>Type</span><span>Key</span><span>Origin</span><span>Person</span></div>`
    : null
}
<ol class="events" id="events" aria-label="Events, newest first; each opens its ids, page and properties">${view.events.map((e) => eventItem(e, byId, view.now))}</ol>
${view.events.length === 0 && view.problems.length === 0 ? emptyNotice(view, key) : null}
<p class="button-row">${view.first ? null : html`<a class="button" href="${EVENTS_PATH}${filterQuery(view.filters)}">Newest</a>`}${
      view.older ? html`<a class="button" href="${EVENTS_PATH}${filterQuery(view.filters, { cursor: view.older })}">Older</a>` : null
    }</p>`,
  })
}

function emptyNotice(view: EventsView, key: KeyRecord | undefined): Html {
  const { key: _key, ...others } = view.filters
  const filtered = Object.values(others).some((v) => v !== '')
  const waiting = view.live ? ' They appear here as they arrive.' : ''
  return html`<div class="empty" id="no-events"><p>${
    filtered
      ? `No events match these filters.${waiting}`
      : key
        ? `No events sent with ${key.name} yet.${waiting}`
        : html`No events yet. Paste a public key's snippet into a page of an allowed origin, or send one with curl
  (README, "Two minutes with curl"); it appears here within a few seconds.`
  }</p></div>`
}

function filterForm(view: EventsView): Html {
  const f = view.filters
  return html`<form method="get" action="${EVENTS_PATH}" class="filters-form panel" aria-label="Filter events">
  <div class="field">
    <label for="filter-key">Key</label>
    <select id="filter-key" name="key">
      <option value="">All keys</option>
      ${view.keys.map((k) => html`<option value="${k.id}"${k.id === f.key ? html` selected` : null}>${k.name} (${k.keyHint})${k.revokedAt ? ' revoked' : ''}</option>`)}
    </select>
  </div>
  <div class="field">
    <label for="filter-type">Event type</label>
    <input id="filter-type" name="type" type="text" value="${f.type}" placeholder="page_view" maxlength="64" spellcheck="false" autocomplete="off">
  </div>
  <div class="field">
    <label for="filter-from">From <span class="hint-inline">(UTC)</span></label>
    <input id="filter-from" name="from" type="text" inputmode="numeric" value="${f.from}" placeholder="2026-05-01 14:00" maxlength="40" spellcheck="false" autocomplete="off">
  </div>
  <div class="field">
    <label for="filter-to">Before <span class="hint-inline">(UTC)</span></label>
    <input id="filter-to" name="to" type="text" inputmode="numeric" value="${f.to}" placeholder="2026-05-02 00:00" maxlength="40" spellcheck="false" autocomplete="off">
  </div>
  <div class="button-row filter-buttons">
    <button type="submit" class="button primary">Filter</button>
    ${Object.values(f).some((v) => v !== '') ? html`<a class="button" href="${EVENTS_PATH}">Clear</a>` : null}
  </div>
</form>`
}

/**
 * One event, as the page and the live view's JSON helper render it: a line of its time,
 * type, key, origin and person (an empty one says which: a phone's width shows no column
 * heads), which opens (a disclosure, no script) on its ids, page,
 * referrer and properties.
 */
export function eventItem(event: EventRecord, keys: Map<string, KeyRecord>, now: Date): Html {
  const key = keys.get(event.keyId)
  const at = new Date(event.timestamp)
  const properties = Object.keys(event.properties).length
  const person = event.personId ?? event.anonymousId
  return html`<li class="event" data-event-id="${event.id}"><details>
  <summary class="event-row">
    <time datetime="${event.timestamp}" title="${relativeTime(at, now)}">${formatInstant(at)}</time>
    <code class="event-type">${event.eventType}</code>
    <span class="event-key">${key ? key.name : 'a key'}</span>
    <span class="event-origin">${event.origin ?? html`<span class="muted">no origin</span>`}</span>
    <span class="event-person">${person ?? html`<span class="muted">no person</span>`}</span>
  </summary>
  <dl class="event-fields">
    <dt>Key</dt><dd>${key ? html`<a href="${keyPath(key.id)}">${key.name}</a> <code>${key.keyHint}</code>` : 'a key'}</dd>
    <dt>Origin</dt><dd>${event.origin ? html`<code>${event.origin}</code>` : html`<span class="muted">none (not sent by a browser)</span>`}</dd>
    ${event.url ? html`<dt>URL</dt><dd class="wrap"><code>${event.url}</code></dd>` : null}
    ${event.referrer ? html`<dt>Referrer</dt><dd class="wrap"><code>${event.referrer}</code></dd>` : null}
    <dt>Event id</dt><dd><code>${event.id}</code></dd>
    ${event.anonymousId ? html`<dt>Anonymous id</dt><dd><code>${event.anonymousId}</code></dd>` : null}
    ${event.personId ? html`<dt>Person id</dt><dd><code>${event.personId}</code></dd>` : null}
    <dt>Received</dt><dd><time datetime="${event.receivedAt}">${formatInstant(new Date(event.receivedAt))}</time></dd>
    <dt>Properties</dt><dd>${
      properties === 0
        ? html`<span class="muted">none</span>`
        : html`<pre class="properties">${JSON.stringify(event.properties, null, 2)}</pre>`
    }</dd>
  </dl>
</details></li>`
}
