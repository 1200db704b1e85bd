import type { KeyRecord } from '../../keys/service.ts'
import { formatDateTime, relativeTime } from '../format.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { leakPanel } from '../banners.ts'
import { EVENTS_PATH, keyCrumbs, layout } from '../views.ts'
import { originTester, type OriginTest } from './origin-tester.ts'
import { canRoll, expiry, keyPath, keyState, lastUsed, list, stateBadge, time } from './parts.ts'

export function trackingSnippet(serviceOrigin: string, publicKey: string): string {
  return `<script async src="${serviceOrigin}/sdk/v0.js" data-key="${publicKey}"></script>`
}

/**
 * Above a key just created. A constant, not a template inside the page's template: to a
 * reader that does not follow templates nested in `${}`, its apostrophe opened a string
 * that ran to the end of the file.
 */
const CREATED_NOTICE = html`<div class="alert success" role="status">Your public key is ready. Copy the key, or paste the tracking snippet into your site's pages.</div>`

/**
 * A key's page: its notices (created, replaced, report only), the key and snippet to copy,
 * its details, the panels the caller built (`more`) and, for a public key, the origin tester.
 */
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
    /** The key that replaced this one, and the one this key replaced. */
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
${key.leak ? leakPanel(key.leak) : null}
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
    ? html`<p class="notice">The full private key was shown once, when it was created, and cannot be shown again. It ends in <code>${key.keyHint}</code>.</p>`
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
    <dt>Events</dt><dd><a href="${eventsOfKey(key)}">The events sent with this key</a></dd>
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

/** The events page, filtered to this key. */
function eventsOfKey(key: KeyRecord): string {
  return `${EVENTS_PATH}?key=${key.id}`
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
  <p><a href="${eventsOfKey(key)}">Watch this key's events arrive live</a></p>
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
