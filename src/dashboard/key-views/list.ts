import type { KeyRecord } from '../../keys/service.ts'
import { formatDate } from '../format.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { keyCrumbs, KEYS_PATH, layout } from '../views.ts'
import { canRoll, expiry, KEY_FILTERS, keyCategory, keyPath, keyState, lastUsed, list, stateBadge, time, type KeyFilter } from './parts.ts'

/** The key list, filtered by state (`?show=`), with each key's actions. */
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
  <div class="button-row">
    ${who.role === 'owner' ? html`<a class="button" href="${KEYS_PATH}/new-private">Create private key</a>` : null}
    <a class="button primary" href="${KEYS_PATH}/new">Create public key</a>
  </div>
</div>
<p class="lead">Public keys (<code>pk_</code>) go into web pages and apps and work only from their allowed origins.
Private keys (<code>sk_</code>) are for servers: owners create them here (each shown once), and every member can see, edit and revoke them.</p>
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
    ? all.length === 0
      ? html`<div class="empty" id="no-keys"><p>No keys yet. Create a public key to start sending events from your site.</p>
  <p><a class="button primary" href="${KEYS_PATH}/new">Create public key</a></p></div>`
      : html`<div class="empty"><p>No ${labels[filter].toLowerCase()} keys.</p></div>`
    : html`<div class="table-wrap" role="region" aria-labelledby="keys-caption" tabindex="0">
<table class="keys stack">
  <caption id="keys-caption" class="visually-hidden">API keys of ${who.businessName}</caption>
  <thead><tr>
    <th scope="col">Name and key</th><th scope="col">Scopes</th><th scope="col">Allowed from</th>
    <th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Created</th><th scope="col">Status</th>
  </tr></thead>
  <tbody>
  ${keys.map((key) => {
    const state = keyState(key, now)
    return html`<tr class="${state}" data-key-id="${key.id}">
    <th scope="row"><a href="${keyPath(key.id)}">${key.name}</a>
      <div class="key-line"><span class="badge ${key.type}">${key.type}</span> <code class="hint-key">${key.keyHint}</code></div>
      ${key.description ? html`<div class="muted small">${key.description}</div>` : null}</th>
    <td class="scopes" data-label="Scopes">${list(key.scopes, 'none')}</td>
    <td data-label="Allowed from">${key.type === 'public' ? list(key.allowedOrigins, 'none') : list(key.allowedIps, 'any address')}</td>
    <td class="dates" data-label="Expires">${expiry(key, now, true)}</td>
    <td data-label="Last used">${lastUsed(key, now)}</td>
    <td class="dates" data-label="Created">${time(key.createdAt, formatDate(new Date(key.createdAt)))}<div class="muted small">by ${key.createdBy}</div></td>
    <td class="dates status" data-label="Status">${stateBadge(state)}${key.replacedBy && !key.revokedAt ? html` <a class="badge replaced" href="${keyPath(key.replacedBy)}">Replaced</a>` : null}${reportsOnly(key) && !key.revokedAt ? html` <span class="badge report">Report only</span>` : null}${key.revokedAt ? html`<div class="muted small">${time(key.revokedAt, formatDate(new Date(key.revokedAt)))}</div>` : null}${
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

/** A key that serves what its list would refuse: public keys by their origins, private keys by their addresses. */
function reportsOnly(key: KeyRecord): boolean {
  return key.type === 'public' ? key.originPolicy === 'report' : key.allowedIps.length > 0 && key.ipPolicy === 'report'
}
