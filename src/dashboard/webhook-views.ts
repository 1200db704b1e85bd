import { WEBHOOK_EVENT_TYPES } from '../../db/schema/index.ts'
import type { DeliveryRecord, EndpointRecord } from '../webhooks/model.ts'
import { formatDateTime, relativeTime } from './format.ts'
import { copyField } from './copy-field.ts'
import { html, type Html } from './html.ts'
import type { SignedIn } from './sessions.ts'
import { csrfField, endpointPath, layout, WEBHOOKS_PATH, type Crumb } from './views.ts'

const CRUMBS: Crumb[] = [{ label: 'Settings' }, { label: 'Developers' }, { label: 'Webhooks', href: WEBHOOKS_PATH }]

/** What each event means, as the form's checkboxes say it. */
const EVENT_LABELS: Record<(typeof WEBHOOK_EVENT_TYPES)[number], string> = {
  'key.created': 'a key is created',
  'key.revoked': 'a key is revoked',
  'key.rolled': 'a key is rolled',
  'key.expiring': 'a key expires in 7 days, then in 1 day',
  'key.leaked': 'a private key is found in a public place',
  'erasure.completed': "a person's events are erased",
  'webhook.test': 'a test is sent from this page',
}

export interface EndpointForm {
  url: string
  events: string[]
  description: string
  error?: string
}

export { endpointPath }

function state(endpoint: EndpointRecord, now: Date): Html {
  if (!endpoint.enabled) return html`<span class="badge revoked">Disabled</span>`
  if (endpoint.failingSince) {
    return html`<span class="badge expired" title="since ${formatDateTime(new Date(endpoint.failingSince))}">Failing ${relativeTime(new Date(endpoint.failingSince), now).replace(/ ago$/, '')}</span>`
  }
  return html`<span class="badge active">Enabled</span>`
}

/** The business's endpoints, and for owners the form that adds one. */
export function webhooksPage(who: SignedIn, view: { endpoints: EndpointRecord[]; now: Date; form?: EndpointForm; flash?: Html }): Html {
  const owner = who.role === 'owner'
  const form = view.form ?? { url: '', events: ['key.created', 'key.revoked', 'key.rolled', 'key.expiring', 'key.leaked'], description: '' }
  return layout({
    title: 'Webhooks',
    who,
    crumbs: CRUMBS,
    content: html`<h1>Webhooks</h1>
<p class="lead">Where ${who.businessName} is told what happens to its keys and data, as it happens: a signed POST to each endpoint,
retried until it is answered (docs/webhooks.md in the repository says how to verify one).</p>
${view.flash ?? null}
${
  view.endpoints.length === 0
    ? html`<p class="muted">No endpoints yet.</p>`
    : html`<div class="table-wrap"><table class="keys">
  <thead><tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">State</th></tr></thead>
  <tbody>${view.endpoints.map(
    (e) => html`<tr>
    <th scope="row"><a href="${endpointPath(e.id)}"><code class="break">${e.url}</code></a>${e.description ? html`<br><span class="muted small">${e.description}</span>` : null}</th>
    <td>${e.events.map((event, i) => html`${i > 0 ? ' ' : ''}<code>${event}</code>`)}</td>
    <td>${state(e, view.now)}</td>
  </tr>`,
  )}</tbody>
</table></div>`
}
${
  owner
    ? html`<section class="panel" aria-labelledby="add-heading">
  <h2 id="add-heading">Add an endpoint</h2>
  ${form.error ? html`<div class="alert error" role="alert" id="endpoint-error">${form.error}</div>` : null}
  <form method="post" action="${WEBHOOKS_PATH}" class="stack key-form">
    ${csrfField(who)}
    <div class="field">
      <label for="url">URL</label>
      <p class="hint" id="url-hint">An https:// address on the public internet; private and loopback addresses are refused.</p>
      <input id="url" name="url" type="url" required value="${form.url}" aria-describedby="url-hint" placeholder="https://example.com/webhooks/keygate">
    </div>
    <fieldset class="field">
      <legend>Events</legend>
      ${WEBHOOK_EVENT_TYPES.map(
        (type) => html`<div class="checkbox">
        <input type="checkbox" id="event-${type}" name="events" value="${type}"${form.events.includes(type) ? html` checked` : null}>
        <label for="event-${type}"><code>${type}</code> <span class="muted">— ${EVENT_LABELS[type]}</span></label>
      </div>`,
      )}
    </fieldset>
    <div class="field">
      <label for="description">Description <span class="muted">(optional)</span></label>
      <input id="description" name="description" type="text" maxlength="500" value="${form.description}">
    </div>
    <div class="button-row"><button type="submit" class="button primary">Add endpoint</button></div>
  </form>
</section>`
    : html`<p class="notice">Owners of ${who.businessName} add and change endpoints.</p>`
}`,
  })
}

/** A new endpoint's signing secret, shown this once. */
export function secretShownPage(who: SignedIn, endpoint: EndpointRecord, secret: string): Html {
  return layout({
    title: 'Endpoint added',
    who,
    crumbs: [...CRUMBS, { label: 'New endpoint' }],
    content: html`<h1>Endpoint added</h1>
<div class="alert warning" role="note" id="secret-warning"><p><strong>Copy the signing secret now: it is shown this once.</strong>
Your receiver verifies each delivery's <code>webhook-signature</code> with it.</p></div>
<section class="panel" aria-labelledby="secret-heading">
  <h2 id="secret-heading"><code class="break">${endpoint.url}</code></h2>
  ${copyField({ id: 'secret-value', label: 'Signing secret', value: secret, button: 'Copy secret' })}
  <p><a class="button" href="${endpointPath(endpoint.id)}">I have stored it: go to the endpoint</a></p>
</section>`,
  })
}

function deliveryStatus(d: DeliveryRecord): Html {
  if (d.status === 'delivered') return html`<span class="badge active">Delivered</span>`
  if (d.status === 'failed') return html`<span class="badge revoked">Failed</span>`
  return html`<span class="badge expired">Retrying</span>`
}

/** One endpoint: its details, its latest deliveries with a resend each, a test, and for owners enable/disable and remove. */
export function endpointPage(
  who: SignedIn,
  endpoint: EndpointRecord,
  view: { deliveries: DeliveryRecord[]; now: Date; flash?: Html },
): Html {
  const owner = who.role === 'owner'
  const post = (action: string, label: string, kind = 'button') =>
    html`<form method="post" action="${endpointPath(endpoint.id, action)}">${csrfField(who)}<button type="submit" class="${kind}">${label}</button></form>`
  return layout({
    title: 'Webhook endpoint',
    who,
    crumbs: [...CRUMBS, { label: endpoint.description ?? 'Endpoint' }],
    content: html`<div class="page-head">
  <h1><code class="break">${endpoint.url}</code> ${state(endpoint, view.now)}</h1>
  <div class="button-row">
    ${endpoint.enabled ? post('test', 'Send a test') : null}
    ${owner ? (endpoint.enabled ? post('disable', 'Disable') : post('enable', 'Enable', 'button primary')) : null}
    ${
      owner
        ? html`<details class="allow">
      <summary class="button danger">Remove</summary>
      <div class="allow-preview"><p>The endpoint and its deliveries are removed; nothing more is sent to it.</p>${post('delete', 'Confirm: remove this endpoint', 'button danger small')}</div>
    </details>`
        : null
    }
  </div>
</div>
${view.flash ?? null}
${
  !endpoint.enabled && endpoint.failingSince
    ? html`<div class="alert error" role="alert" id="disabled-notice"><p><strong>Disabled after failing since ${formatDateTime(new Date(endpoint.failingSince))}.</strong>
  Nothing is sent to it until it is enabled again; its waiting deliveries then go out.</p></div>`
    : null
}
<section class="panel" aria-labelledby="details-heading">
  <h2 id="details-heading">Details</h2>
  <dl class="details">
    <dt>Events</dt><dd>${endpoint.events.map((event, i) => html`${i > 0 ? ' ' : ''}<code>${event}</code>`)}</dd>
    <dt>Description</dt><dd>${endpoint.description ?? html`<span class="muted">none</span>`}</dd>
    <dt>Added</dt><dd><time datetime="${endpoint.createdAt}">${formatDateTime(new Date(endpoint.createdAt))}</time></dd>
    <dt>Signing secret</dt><dd class="muted">shown once, when the endpoint was added</dd>
  </dl>
</section>
<section class="panel" aria-labelledby="deliveries-heading" id="deliveries">
  <h2 id="deliveries-heading">Deliveries</h2>
  ${
    view.deliveries.length === 0
      ? html`<p class="muted">Nothing sent yet.</p>`
      : html`<div class="table-wrap"><table class="keys compact">
    <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Answer</th><th scope="col">Time</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody>${view.deliveries.map(
      (d) => html`<tr data-delivery="${d.id}">
      <th scope="row"><code>${d.event}</code></th>
      <td>${deliveryStatus(d)}</td>
      <td>${d.attempts}</td>
      <td>${d.lastStatus !== null ? html`<code>${d.lastStatus}</code>` : d.lastError ? html`<span class="small">${d.lastError}</span>` : html`<span class="muted">—</span>`}</td>
      <td><time datetime="${d.createdAt}" title="${formatDateTime(new Date(d.createdAt))}">${relativeTime(new Date(d.createdAt), view.now)}</time></td>
      <td>${endpoint.enabled ? post(`deliveries/${d.id}/resend`, 'Resend', 'button small') : null}</td>
    </tr>`,
    )}</tbody>
  </table></div>`
  }
</section>`,
  })
}
