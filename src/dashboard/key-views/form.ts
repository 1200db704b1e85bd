import type { KeyType } from '../../access/key-format.ts'
import { PUBLIC_KEY_SCOPES, SCOPES, type Scope } from '../../access/scopes.ts'
import { PUBLIC_KEY_CEILING_VISITORS, type Budget } from '../../config.ts'
import type { KeyRecord } from '../../keys/service.ts'
import { firstExpiryDay, formatDate } from '../format.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { csrfField, keyCrumbs, KEYS_PATH, layout } from '../views.ts'
import { keyPath } from './parts.ts'

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

export interface KeyFormValues {
  name: string
  description: string
  origins: string
  scopes: string[]
  expiresOn: string
  /** Both empty: the service default. */
  rateLimitLimit: string
  rateLimitWindow: string
  /** originPolicy "report". */
  reportOnly: boolean
  /** Private keys: one entry per line. */
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

/** The form that creates a public key or edits a key, re-rendered with its problems. */
/** Where each type's creation form lives, under the keys page. */
export const NEW_KEY_PATHS: Record<KeyType, string> = { public: 'new', private: 'new-private' }

export function keyFormPage(
  who: SignedIn,
  mode: { kind: 'create'; type: KeyType } | { kind: 'edit'; key: KeyRecord },
  values: KeyFormValues,
  errors: KeyFormErrors,
  now: Date,
  /** RATE_LIMIT_PUBLIC and RATE_LIMIT_PRIVATE: the form shows the one of the key's type. */
  defaultRateLimits: Record<KeyType, Budget>,
): Html {
  const editing = mode.kind === 'edit'
  // Members create public keys; owners create private ones too (shown once, on the page the form answers).
  const type: KeyType = editing ? mode.key.type : mode.type
  const defaultRateLimit = defaultRateLimits[type]
  const action = editing ? keyPath(mode.key.id, 'edit') : `${KEYS_PATH}/${NEW_KEY_PATHS[type]}`
  const title = editing ? `Edit ${mode.key.name}` : `Create a ${type} key`
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
      label: editing ? 'Edit' : `New ${type} key`,
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
    <p class="hint" id="rate-limit-hint">${type === 'public' ? `Requests each visitor (each client address) may make; all visitors together, ${PUBLIC_KEY_CEILING_VISITORS} times that` : 'Requests the key may make, from all its servers together'}, sliding over the window.
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

/** A private key's allowed IPs and IP report-only. */
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
