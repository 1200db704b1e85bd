import type { KeyType } from '../../access/key-format.ts'
import type { OriginMatch } from '../../access/origin.ts'
import { PUBLIC_KEY_SCOPES, SCOPES, type Scope } from '../../access/scopes.ts'
import type { Budget } from '../../config.ts'
import type { KeyRecord } from '../../keys/service.ts'
import { firstExpiryDay, formatDate, formatDateTime, relativeTime } from '../format.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { csrfField, keyCrumbs, KEYS_PATH, layout } from '../views.ts'

/** What each scope lets a key do. */
const SCOPE_LABELS: Record<Scope, string> = {
  ANALYTICS_READ: 'Read analytics events',
  ANALYTICS_WRITE: 'Send analytics events (POST /api/v0/analytics)',
  AUDIENCE_PERSON_READ: 'Read people',
  AUDIENCE_PERSON_WRITE: 'Create and update people (POST /api/v0/audience/people)',
  AUDIENCE_COMPANY_READ: 'Read companies',
  AUDIENCE_COMPANY_WRITE: 'Create and update companies (POST /api/v0/audience/companies)',
  AUDIENCE_LIST_READ: 'Read lists',
  AUDIENCE_LIST_WRITE: 'Add people to lists and remove them (/api/v0/audience/lists/:slug/people)',
  BLOG_READ: 'Read published blog posts (GET /api/v0/blog/*)',
  BLOG_WRITE: 'Write blog posts',
  FLOW_TRIGGER: 'Trigger flows (POST /api/v0/flow/:id/trigger)',
  MEMORY_READ: 'Read memory documents',
  MEMORY_WRITE: 'Write memory documents',
}

export type KeyState = 'active' | 'revoked' | 'expired'

export function keyState(key: KeyRecord, now: Date): KeyState {
  if (key.revokedAt) return 'revoked'
  if (key.expiresAt && new Date(key.expiresAt).getTime() <= now.getTime()) return 'expired'
  return 'active'
}

/** The list's filter: replaced keys are apart from active ones even while their grace runs. */
export const KEY_FILTERS = ['all', 'active', 'replaced', 'revoked', 'expired'] as const
export type KeyFilter = (typeof KEY_FILTERS)[number]

export function keyCategory(key: KeyRecord, now: Date): Exclude<KeyFilter, 'all'> {
  if (key.revokedAt) return 'revoked'
  if (key.replacedBy) return 'replaced'
  return keyState(key, now)
}

/** Whether the dashboard offers to roll the key (contract section 9: the service says 409 otherwise). */
export function canRoll(key: KeyRecord, now: Date): boolean {
  return key.type === 'public' && keyCategory(key, now) === 'active'
}

/** Grace choices of the roll form, in seconds (contract section 9 allows 0 to 7 days). */
export const ROLL_GRACES = [
  { seconds: 0, label: 'Now', hint: 'the old key is refused at once' },
  { seconds: 3600, label: '1 hour', hint: 'enough for a quick deploy' },
  { seconds: 86_400, label: '24 hours', hint: 'the usual choice: a day to deploy the new key' },
  { seconds: 604_800, label: '7 days', hint: 'for apps that take a release to update' },
] as const

export function keyPath(id: string, action = ''): string {
  return `${KEYS_PATH}/${id}${action ? `/${action}` : ''}`
}

export function trackingSnippet(serviceOrigin: string, publicKey: string): string {
  return `<script async src="${serviceOrigin}/sdk/v0.js" data-key="${publicKey}"></script>`
}

function stateBadge(state: KeyState): Html {
  if (state === 'revoked') return html`<span class="badge revoked">Revoked</span>`
  if (state === 'expired') return html`<span class="badge expired">Expired</span>`
  return html`<span class="badge active">Active</span>`
}

function time(at: string, text: string): Html {
  return html`<time datetime="${at}" title="${formatDateTime(new Date(at))}">${text}</time>`
}

function lastUsed(key: KeyRecord, now: Date): Html | string {
  return key.lastUsedAt ? time(key.lastUsedAt, relativeTime(new Date(key.lastUsedAt), now)) : 'never'
}

function expiry(key: KeyRecord, now: Date, short = false): Html | string {
  if (!key.expiresAt) return 'never'
  const at = new Date(key.expiresAt)
  const when = time(key.expiresAt, short ? formatDate(at) : formatDateTime(at))
  return at.getTime() <= now.getTime()
    ? html`${when} <span class="badge expired">expired</span>`
    : html`${when} <span class="muted small">(${relativeTime(at, now)})</span>`
}

function list(items: readonly string[], empty: string): Html {
  if (items.length === 0) return html`<span class="muted">${empty}</span>`
  return html`<ul class="plain">${items.map((i) => html`<li><code>${i}</code></li>`)}</ul>`
}

export function keyListPage(who: SignedIn, all: KeyRecord[], now: Date, flash?: Html, filter: KeyFilter = 'all'): Html {
  const counts: Record<KeyFilter, number> = { all: all.length, active: 0, replaced: 0, revoked: 0, expired: 0 }
  for (const key of all) counts[keyCategory(key, now)]++
  const keys = filter === 'all' ? all : all.filter((key) => keyCategory(key, now) === filter)
  const labels: Record<KeyFilter, string> = { all: 'All', active: 'Active', replaced: 'Replaced', revoked: 'Revoked', expired: 'Expired' }
  return layout({
    title: 'API keys',
    who,
    crumbs: keyCrumbs(),
    content: html`<div class="page-head">
  <h1>API keys</h1>
  <a class="button primary" href="${KEYS_PATH}/new">Create public key</a>
</div>
<p class="lead">Public keys (<code>pk_</code>) go into web pages and apps and work only from their allowed origins.
Private keys (<code>sk_</code>) are for servers: operators create and roll them; you can see, edit and revoke them here.</p>
${flash ?? null}
${
  all.length > 0
    ? html`<nav class="filters" aria-label="Show keys">${KEY_FILTERS.map(
        (f) =>
          html`<a href="${f === 'all' ? KEYS_PATH : `${KEYS_PATH}?show=${f}`}"${f === filter ? html` aria-current="page"` : null}>${labels[f]} <span class="count">${counts[f]}</span></a>`,
      )}</nav>`
    : null
}
${
  keys.length === 0
    ? html`<div class="empty"><p>${all.length === 0 ? 'No keys yet. Create a public key to start sending events from your site.' : `No ${labels[filter].toLowerCase()} keys.`}</p></div>`
    : html`<div class="table-wrap" role="region" aria-labelledby="keys-caption" tabindex="0">
<table class="keys">
  <caption id="keys-caption" class="visually-hidden">API keys of ${who.businessName}</caption>
  <thead><tr>
    <th scope="col">Name and key</th><th scope="col">Scopes</th><th scope="col">Allowed origins</th>
    <th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Created</th><th scope="col">Status</th>
  </tr></thead>
  <tbody>
  ${keys.map((key) => {
    const state = keyState(key, now)
    return html`<tr class="${state}" data-key-id="${key.id}">
    <th scope="row"><a href="${keyPath(key.id)}">${key.name}</a>
      <div class="key-line"><span class="badge ${key.type}">${key.type}</span> <code class="hint-key">${key.keyHint}</code></div>
      ${key.description ? html`<div class="muted small">${key.description}</div>` : null}</th>
    <td class="scopes">${list(key.scopes, 'none')}</td>
    <td>${key.type === 'public' ? list(key.allowedOrigins, 'none') : html`<span class="muted small">none: a server key</span>`}</td>
    <td class="dates">${expiry(key, now, true)}</td>
    <td>${lastUsed(key, now)}</td>
    <td class="dates">${time(key.createdAt, formatDate(new Date(key.createdAt)))}<div class="muted small">by ${key.createdBy}</div></td>
    <td class="dates">${stateBadge(state)}${key.replacedBy && !key.revokedAt ? html` <a class="badge replaced" href="${keyPath(key.replacedBy)}">Replaced</a>` : null}${key.originPolicy === 'report' && key.type === 'public' && !key.revokedAt ? html` <span class="badge report">Report only</span>` : null}${key.revokedAt ? html`<div class="muted small">${time(key.revokedAt, formatDate(new Date(key.revokedAt)))}</div>` : null}${
      key.revokedAt
        ? null
        : html`<div class="actions"><a href="${keyPath(key.id, 'edit')}">Edit<span class="visually-hidden"> ${key.name}</span></a>
      ${canRoll(key, now) ? html`<a href="${keyPath(key.id, 'roll')}">Roll<span class="visually-hidden"> ${key.name}</span></a>` : null}
      <a class="danger-link" href="${keyPath(key.id, 'revoke')}">Revoke<span class="visually-hidden"> ${key.name}</span></a></div>`
    }</td>
  </tr>`
  })}
  </tbody>
</table>
</div>`
}`,
  })
}

export interface OriginTest {
  origin: string
  match: OriginMatch
}

/**
 * Above a key just created. A constant, not a template inside the page's template: to a
 * reader that does not follow templates nested in `${}`, its apostrophe opened a string
 * that ran to the end of the file.
 */
const CREATED_NOTICE = html`<div class="alert success" role="status">Your public key is ready. Copy the key, or paste the tracking snippet into your site's pages.</div>`

export function keyPage(
  who: SignedIn,
  key: KeyRecord,
  view: {
    now: Date
    publicKey: string | null
    serviceOrigin: string
    created: boolean
    test?: OriginTest
    flash?: Html
    /** The key that replaced this one (section 9), and the one this key replaced. */
    replacement?: KeyRecord | null
    predecessor?: KeyRecord | null
    /** Panels below the details: usage, scopes, the trail (built by their own views). */
    more?: Html
  },
): Html {
  const state = keyState(key, view.now)
  const usable = state === 'active'
  return layout({
    title: key.name,
    who,
    crumbs: keyCrumbs({ label: key.name }),
    content: html`<div class="page-head">
  <h1>${key.name} <span class="badge ${key.type}">${key.type}</span> ${stateBadge(state)}${key.replacedBy && !key.revokedAt ? html` <span class="badge replaced">Replaced</span>` : null}${key.type === 'public' && key.originPolicy === 'report' && !key.revokedAt ? html` <span class="badge report">Report only</span>` : null}</h1>
  <div class="button-row">
    ${key.revokedAt ? null : html`<a class="button" href="${keyPath(key.id, 'edit')}">Edit</a>`}
    ${canRoll(key, view.now) ? html`<a class="button" href="${keyPath(key.id, 'roll')}">Roll key</a>` : null}
    ${key.revokedAt ? null : html`<a class="button danger" href="${keyPath(key.id, 'revoke')}">Revoke</a>`}
  </div>
</div>
${view.flash ?? null}
${view.created ? CREATED_NOTICE : null}
${key.replacedBy && !key.revokedAt ? replacedNotice(key, view.replacement ?? null, view.now) : null}
${
  key.type === 'public' && key.originPolicy === 'report' && !key.revokedAt
    ? html`<div class="alert warning" role="note" id="report-only-banner"><p><strong>Report only.</strong> Requests from origins the allowed list does not allow are
  served, not refused, and listed under <a href="#refused-origins">Refused origins</a>. When the list is right,
  ${key.replacedBy ? 'turn it off on the new key' : html`<a href="${keyPath(key.id, 'edit')}">turn report-only off</a>`} to enforce it.</p></div>`
    : null
}
${
  view.publicKey && !key.revokedAt && !key.replacedBy
    ? html`<section class="panel" aria-labelledby="use-heading">
  <h2 id="use-heading">Use this key</h2>
  <div class="field">
    <label for="key-value">Public key</label>
    <div class="copy-row">
      <input id="key-value" type="text" readonly value="${view.publicKey}" spellcheck="false" autocomplete="off">
      <button type="button" class="button" data-copy="key-value">Copy key</button>
    </div>
  </div>
  <div class="field">
    <label for="snippet">Tracking snippet</label>
    <p class="hint" id="snippet-hint">Paste it into the <code>&lt;head&gt;</code> of every page of an allowed origin; it records page views.</p>
    <div class="copy-row">
      <textarea id="snippet" readonly rows="3" spellcheck="false" aria-describedby="snippet-hint">${trackingSnippet(view.serviceOrigin, view.publicKey)}</textarea>
      <button type="button" class="button" data-copy="snippet">Copy snippet</button>
    </div>
  </div>
  <p class="copy-status" role="status" aria-live="polite"></p>
  ${key.lastUsedAt === null ? firstRequestPanel(key) : null}
</section>`
    : null
}
${
  key.type === 'private'
    ? html`<p class="notice">The full private key was shown once, to the operator who created it, and cannot be shown again. It ends in <code>${key.keyHint}</code>.</p>`
    : null
}
<section class="panel" aria-labelledby="details-heading">
  <h2 id="details-heading">Details</h2>
  <dl class="details">
    <dt>Key</dt><dd><code>${key.keyHint}</code></dd>
    <dt>Description</dt><dd>${key.description ?? html`<span class="muted">none</span>`}</dd>
    <dt>Scopes</dt><dd>${list(key.scopes, 'none')}</dd>
    ${key.type === 'public' ? html`<dt>Allowed origins</dt><dd>${list(key.allowedOrigins, 'none')}</dd>` : null}
    ${
      key.type === 'private'
        ? html`<dt>Allowed IPs</dt><dd>${list(key.allowedIps, 'any address')}${key.ipPolicy === 'report' ? html` <span class="badge report">Report only</span>` : null}</dd>`
        : null
    }
    <dt>Expires</dt><dd>${expiry(key, view.now)}</dd>
    <dt>Last used</dt><dd>${lastUsed(key, view.now)}</dd>
    <dt>Created</dt><dd>${time(key.createdAt, formatDateTime(new Date(key.createdAt)))} by ${key.createdBy}</dd>
    ${
      key.rolledFrom
        ? html`<dt>Rolled from</dt><dd><a href="${keyPath(key.rolledFrom)}">${view.predecessor ? html`${view.predecessor.name} <code>${view.predecessor.keyHint}</code>` : 'the previous key'}</a></dd>`
        : null
    }
    ${
      key.replacedBy
        ? html`<dt>Replaced by</dt><dd><a href="${keyPath(key.replacedBy)}">${view.replacement ? html`${view.replacement.name} <code>${view.replacement.keyHint}</code>` : 'the new key'}</a></dd>`
        : null
    }
    ${key.revokedAt ? html`<dt>Revoked</dt><dd>${time(key.revokedAt, formatDateTime(new Date(key.revokedAt)))}</dd>` : null}
  </dl>
</section>
${view.more ?? null}
${key.type === 'public' ? originTester(key, usable, state, view.test) : null}`,
  })
}

/**
 * On a key not used yet: a panel the pages' script keeps asking about the key (every few
 * seconds, from this dashboard only) until its first accepted request, so a member who
 * just pasted the snippet sees it work. Without the script, reloading the page does it.
 */
function firstRequestPanel(key: KeyRecord): Html {
  return html`<div class="first-request waiting" id="first-request" data-first-request="${keyPath(key.id, 'first-request')}" role="status" aria-live="polite">
  <p class="state"><span class="pulse" aria-hidden="true"></span> <strong>Waiting for the first request…</strong></p>
  <p class="hint detail">Open a page of an allowed origin that has the snippet; this panel changes when the key's first request is accepted.</p>
</div>`
}

/** On a rolled key: what replaced it, when it stops (or stopped), and whether it has gone quiet. */
function replacedNotice(key: KeyRecord, replacement: KeyRecord | null, now: Date): Html {
  const ends = key.expiresAt ? new Date(key.expiresAt) : null
  const ended = ends !== null && ends.getTime() <= now.getTime()
  const target = html`<a href="${keyPath(key.replacedBy!)}">${replacement ? html`${replacement.name} <code>${replacement.keyHint}</code>` : 'the new key'}</a>`
  return html`<div class="alert ${ended ? 'ended' : 'warning'}" role="status" id="replaced-notice">
  <p><strong>Replaced by ${target}.</strong>
  ${
    ends === null
      ? null
      : ended
        ? html`It stopped working ${time(key.expiresAt!, formatDateTime(ends))} (${relativeTime(ends, now)}); requests made with it are refused as expired.`
        : html`It keeps working until ${time(key.expiresAt!, formatDateTime(ends))} (${relativeTime(ends, now)}), then is refused as expired.`
  }</p>
  <p>Last used: ${key.lastUsedAt ? html`${time(key.lastUsedAt, formatDateTime(new Date(key.lastUsedAt)))} (${relativeTime(new Date(key.lastUsedAt), now)})` : 'never'}.
  ${ended ? null : 'When it has gone quiet, every page has the new key; you can then revoke it to end it early.'}</p>
</div>`
}

export function rollPage(who: SignedIn, key: KeyRecord, error?: string): Html {
  return layout({
    title: `Roll ${key.name}`,
    who,
    crumbs: keyCrumbs({ label: key.name, href: keyPath(key.id) }, { label: 'Roll' }),
    content: html`<h1>Roll <q>${key.name}</q></h1>
<p class="lead">Rolling creates a new key with the same name, origins, scopes and limits. The old key
<code>${key.keyHint}</code> keeps working for the grace you choose, so that pages still embedding it are not broken
while you deploy the new one; then it is refused as expired.</p>
${error ? html`<div class="alert error" role="alert" id="roll-error">${error}</div>` : null}
<form method="post" action="${keyPath(key.id, 'roll')}" class="stack key-form">
  ${csrfField(who)}
  <fieldset class="field">
    <legend>How long may the old key keep working?</legend>
    ${ROLL_GRACES.map(
      (grace) => html`<div class="checkbox">
      <input type="radio" id="grace-${grace.seconds}" name="graceSeconds" value="${grace.seconds}"${grace.seconds === 86_400 ? html` checked` : null}>
      <label for="grace-${grace.seconds}">${grace.label} <span class="muted">— ${grace.hint}</span></label>
    </div>`,
    )}
  </fieldset>
  <div class="button-row">
    <button type="submit" class="button primary">Roll key</button>
    <a class="button" href="${keyPath(key.id)}">Cancel</a>
  </div>
</form>`,
  })
}

function originTester(key: KeyRecord, usable: boolean, state: KeyState, test?: OriginTest): Html {
  return html`<section class="panel" aria-labelledby="tester-heading">
  <h2 id="tester-heading">Origin tester</h2>
  <p class="hint">Would a request from this origin be accepted? The same matcher as the API decides.
  Browsers send origins as <code>scheme://host[:port]</code>, e.g. <code>https://www.example.com</code>;
  leave the field empty to test a request without an <code>Origin</code> header.</p>
  <form method="get" action="${keyPath(key.id)}" class="inline-form" data-origin-tester="${keyPath(key.id, 'origin-test')}">
    <label for="test-origin">Origin to test</label>
    <input id="test-origin" name="origin" type="text" inputmode="url" spellcheck="false" autocomplete="off"
      placeholder="https://www.example.com" value="${test?.origin ?? ''}" aria-describedby="tester-result">
    <button type="submit" class="button">Test origin</button>
  </form>
  <div id="tester-result" class="tester-result" role="status" aria-live="polite">${test ? testerResult(test, usable, state) : null}</div>
</section>`
}

function testerResult(test: OriginTest, usable: boolean, state: KeyState): Html {
  const shown = test.origin === '' ? 'a request without an Origin header' : test.origin
  const caveat = usable
    ? null
    : html`<p class="small">Note: this key is ${state}, so every request is refused (401) whatever its origin.</p>`
  return test.match.allowed
    ? html`<div class="result ok"><p><strong>Accepted.</strong> The entry <code>${test.match.entry}</code> matches <code>${shown}</code>.</p>${caveat}</div>`
    : html`<div class="result refused"><p><strong>Refused</strong> (403 origin_not_allowed). ${test.match.reason}</p>${caveat}</div>`
}

export interface KeyFormValues {
  name: string
  description: string
  origins: string
  scopes: string[]
  expiresOn: string
  /** Both empty: the service default. */
  rateLimitLimit: string
  rateLimitWindow: string
  /** originPolicy "report" (contract section 11). */
  reportOnly: boolean
  /** Private keys: one entry per line (contract section 14). */
  allowedIps: string
  /** Private keys: ipPolicy "report". */
  ipReportOnly: boolean
}

export interface KeyFormErrors {
  name?: string
  description?: string
  origins?: string[]
  allowedIps?: string[]
  scopes?: string
  expiresOn?: string
  rateLimit?: string
}

export function keyFormPage(
  who: SignedIn,
  mode: { kind: 'create' } | { kind: 'edit'; key: KeyRecord },
  values: KeyFormValues,
  errors: KeyFormErrors,
  now: Date,
  /** RATE_LIMIT_PUBLIC and RATE_LIMIT_PRIVATE: the form shows the one of the key's type. */
  defaultRateLimits: Record<KeyType, Budget>,
): Html {
  const editing = mode.kind === 'edit'
  // Members create public keys only; operators create private ones, which members may edit.
  const type: KeyType = editing ? mode.key.type : 'public'
  const defaultRateLimit = defaultRateLimits[type]
  const action = editing ? keyPath(mode.key.id, 'edit') : KEYS_PATH
  const title = editing ? `Edit ${mode.key.name}` : 'Create a public key'
  const summary: { href: string; text: string }[] = [
    ...(errors.name ? [{ href: '#name', text: errors.name }] : []),
    ...(errors.description ? [{ href: '#description', text: errors.description }] : []),
    ...(errors.origins ?? []).map((text) => ({ href: '#origins', text })),
    ...(errors.allowedIps ?? []).map((text) => ({ href: '#allowed-ips', text })),
    ...(errors.scopes ? [{ href: '#scope-0', text: errors.scopes }] : []),
    ...(errors.expiresOn ? [{ href: '#expires-on', text: errors.expiresOn }] : []),
    ...(errors.rateLimit ? [{ href: '#rate-limit', text: errors.rateLimit }] : []),
  ]
  const describe = (...ids: (string | false | undefined)[]) => ids.filter(Boolean).join(' ')
  return layout({
    title,
    who,
    crumbs: keyCrumbs(...(editing ? [{ label: mode.key.name, href: keyPath(mode.key.id) }] : []), {
      label: editing ? 'Edit' : 'New public key',
    }),
    content: html`<h1>${title}</h1>
${
  summary.length
    ? html`<div class="alert error" role="alert" tabindex="-1" id="error-summary">
  <h2>The key was not ${editing ? 'saved' : 'created'}: ${summary.length === 1 ? 'one field needs' : `${summary.length} fields need`} a fix</h2>
  <ul>${summary.map((s) => html`<li><a href="${s.href}">${s.text}</a></li>`)}</ul>
</div>`
    : null
}
<form method="post" action="${action}" class="stack key-form" novalidate data-key-form>
  ${csrfField(who)}
  <div class="field${errors.name ? ' has-error' : ''}">
    <label for="name">Name</label>
    <p class="hint" id="name-hint">Where the key is used, e.g. <q>Marketing site</q>. Up to 100 characters.</p>
    ${errors.name ? html`<p class="field-error" id="name-error">${errors.name}</p>` : null}
    <input id="name" name="name" type="text" required maxlength="100" value="${values.name}"
      aria-describedby="${describe('name-hint', errors.name && 'name-error')}"${errors.name ? html` aria-invalid="true"` : null}>
  </div>
  <div class="field${errors.description ? ' has-error' : ''}">
    <label for="description">Description <span class="optional">(optional)</span></label>
    ${errors.description ? html`<p class="field-error" id="description-error">${errors.description}</p>` : null}
    <textarea id="description" name="description" rows="2" maxlength="1000"${errors.description ? html` aria-invalid="true" aria-describedby="description-error"` : null}>${values.description}</textarea>
  </div>
  ${type === 'public' ? originFields(values, errors) : ipFields(values, errors)}
  <fieldset class="field${errors.scopes ? ' has-error' : ''}"${errors.scopes ? html` aria-describedby="scopes-error"` : null}>
    <legend>Scopes <span class="hint-inline">(at least one)</span></legend>
    ${errors.scopes ? html`<p class="field-error" id="scopes-error">${errors.scopes}</p>` : null}
    ${type === 'public' ? html`<p class="hint">Public keys can only hold the scopes of endpoints a web page may call.</p>` : null}
    ${(type === 'public' ? PUBLIC_KEY_SCOPES : SCOPES).map(
      (scope, i) => html`<div class="checkbox">
      <input type="checkbox" id="scope-${i}" name="scopes" value="${scope}"${values.scopes.includes(scope) ? html` checked` : null}>
      <label for="scope-${i}"><code>${scope}</code> <span class="muted">${SCOPE_LABELS[scope]}</span></label>
    </div>`,
    )}
  </fieldset>
  <div class="field${errors.expiresOn ? ' has-error' : ''}">
    <label for="expires-on">Expires on <span class="optional">(optional)</span></label>
    <p class="hint" id="expires-hint">The key stops working at 00:00 UTC on this day. Leave empty for a key that does not expire.</p>
    ${errors.expiresOn ? html`<p class="field-error" id="expires-error">${errors.expiresOn}</p>` : null}
    <input id="expires-on" name="expiresOn" type="date" min="${firstExpiryDay(now)}" value="${values.expiresOn}"
      aria-describedby="${describe('expires-hint', errors.expiresOn && 'expires-error')}"${errors.expiresOn ? html` aria-invalid="true"` : null}>
  </div>
  <fieldset class="field${errors.rateLimit ? ' has-error' : ''}" aria-describedby="${describe('rate-limit-hint', errors.rateLimit && 'rate-limit-error')}">
    <legend>Rate limit <span class="optional">(optional)</span></legend>
    <p class="hint" id="rate-limit-hint">${type === 'public' ? 'Requests each visitor (each client address) may make' : 'Requests the key may make, from all its servers together'}, sliding over the window.
    Leave both empty for the service default: ${defaultRateLimit.limit} requests per ${defaultRateLimit.windowSeconds} seconds.</p>
    ${errors.rateLimit ? html`<p class="field-error" id="rate-limit-error">${errors.rateLimit}</p>` : null}
    <div class="inline-fields">
      <input id="rate-limit" name="rateLimitLimit" type="number" min="1" max="1000000" inputmode="numeric"
        placeholder="${defaultRateLimit.limit}" value="${values.rateLimitLimit}"${errors.rateLimit ? html` aria-invalid="true"` : null}>
      <label for="rate-limit">requests per</label>
      <input id="rate-limit-window" name="rateLimitWindow" type="number" min="1" max="86400" inputmode="numeric"
        placeholder="${defaultRateLimit.windowSeconds}" value="${values.rateLimitWindow}"${errors.rateLimit ? html` aria-invalid="true"` : null}>
      <label for="rate-limit-window">seconds</label>
    </div>
  </fieldset>
  <div class="button-row">
    <button type="submit" class="button primary">${editing ? 'Save changes' : 'Create key'}</button>
    <a class="button" href="${editing ? keyPath(mode.key.id) : KEYS_PATH}">Cancel</a>
  </div>
</form>`,
  })
}

/** A public key's allowed origins and origin report-only (contract sections 2 and 11). */
function originFields(values: KeyFormValues, errors: KeyFormErrors): Html {
  return html`<div class="field${errors.origins ? ' has-error' : ''}">
  <label for="origins">Allowed origins</label>
  <p class="hint" id="origins-hint">One per line. <code>example.com</code> allows it and all its subdomains over https;
  <code>app.example.com</code> allows that host over http and https; <code>https://app.example.com:8443</code> allows exactly that origin;
  <code>localhost:3000</code> allows local development; <code>*</code> allows every site.</p>
  <ul class="field-error origin-errors" id="origins-error" aria-live="polite">${(errors.origins ?? []).map((e) => html`<li>${e}</li>`)}</ul>
  <textarea id="origins" name="origins" rows="4" required spellcheck="false" autocapitalize="off"
    data-origin-check="/dashboard/api/check-origins"
    aria-describedby="origins-hint origins-error"${errors.origins ? html` aria-invalid="true"` : null}>${values.origins}</textarea>
</div>
<div class="field">
  <div class="checkbox">
    <input type="checkbox" id="report-only" name="reportOnly"${values.reportOnly ? html` checked` : null} aria-describedby="report-only-hint">
    <label for="report-only">Report only: log refused origins, do not refuse them</label>
  </div>
  <p class="hint" id="report-only-hint">For trying a list out on a live site: requests from origins the list does not allow are served,
  and counted under the key's refused origins, where one click allows them. Scopes, endpoints and rate limits still apply.</p>
</div>`
}

/** A private key's allowed IPs and IP report-only (contract section 14). */
function ipFields(values: KeyFormValues, errors: KeyFormErrors): Html {
  return html`<div class="field${errors.allowedIps ? ' has-error' : ''}">
  <label for="allowed-ips">Allowed IPs <span class="optional">(optional)</span></label>
  <p class="hint" id="allowed-ips-hint">The client addresses this key works from, one per line: an address, like <code>203.0.113.7</code>,
  or a range, like <code>198.51.100.0/24</code> or <code>2001:db8::/48</code>. Requests from any other address are refused
  (403 <code>ip_not_allowed</code>). Leave empty to allow any address.</p>
  <ul class="field-error" id="allowed-ips-error" aria-live="polite">${(errors.allowedIps ?? []).map((e) => html`<li>${e}</li>`)}</ul>
  <textarea id="allowed-ips" name="allowedIps" rows="4" spellcheck="false" autocapitalize="off"
    aria-describedby="allowed-ips-hint allowed-ips-error"${errors.allowedIps ? html` aria-invalid="true"` : null}>${values.allowedIps}</textarea>
</div>
<div class="field">
  <div class="checkbox">
    <input type="checkbox" id="ip-report-only" name="ipReportOnly"${values.ipReportOnly ? html` checked` : null} aria-describedby="ip-report-only-hint">
    <label for="ip-report-only">IP report only: log refused addresses, do not refuse them</label>
  </div>
  <p class="hint" id="ip-report-only-hint">For trying a list out: requests from addresses the list does not allow are served,
  and counted under the key's refused addresses, where one click allows them. Scopes, endpoints and rate limits still apply.</p>
</div>`
}

export function revokePage(who: SignedIn, key: KeyRecord, now = new Date()): Html {
  return layout({
    title: `Revoke ${key.name}`,
    who,
    crumbs: keyCrumbs({ label: key.name, href: keyPath(key.id) }, { label: 'Revoke' }),
    content: html`<h1>Revoke <q>${key.name}</q>?</h1>
<div class="panel warning">
  <p>Every request made with <code>${key.keyHint}</code> will be refused at once (401 <code>invalid_api_key</code>),
  ${key.type === 'public' ? 'from every page that embeds it' : 'from every server that uses it'}. Revoking cannot be undone;
  the key's record and the data sent with it are kept.</p>
  ${
    canRoll(key, now)
      ? html`<p>Replacing a leaked key? <a href="${keyPath(key.id, 'roll')}">Roll it instead</a>: a new key is made at once, and this one keeps
  working for the grace you choose while your pages switch over.</p>`
      : null
  }
  <form method="post" action="${keyPath(key.id, 'revoke')}" class="button-row">
    ${csrfField(who)}
    <button type="submit" class="button danger">Revoke key</button>
    <a class="button" href="${keyPath(key.id)}">Cancel</a>
  </form>
</div>`,
  })
}

export function formValuesOf(key: KeyRecord): KeyFormValues {
  return {
    name: key.name,
    description: key.description ?? '',
    origins: key.allowedOrigins.join('\n'),
    scopes: key.scopes,
    expiresOn: key.expiresAt ? formatDate(new Date(key.expiresAt)) : '',
    rateLimitLimit: key.rateLimit ? String(key.rateLimit.limit) : '',
    rateLimitWindow: key.rateLimit ? String(key.rateLimit.windowSeconds) : '',
    reportOnly: key.originPolicy === 'report',
    allowedIps: key.allowedIps.join('\n'),
    ipReportOnly: key.ipPolicy === 'report',
  }
}
