import type { AuditEntryRow, FieldChanges } from '../audit/trail.ts'
import type { AUDITED_FIELDS, KeyRecord } from '../keys/service.ts'
import { formatDateTime, relativeTime } from './format.ts'
import { html, type Html } from './html.ts'
import type { SignedIn } from './sessions.ts'
import { AUDIT_PATH, keyCrumbs, KEYS_PATH, layout, type Crumb } from './views.ts'

const ACTIONS: Record<AuditEntryRow['action'], string> = {
  'key.created': 'Key created',
  'key.updated': 'Key changed',
  'key.revoked': 'Key revoked',
  'key.rolled': 'Key rolled',
  'key.leaked': 'Key found in a public place',
  'key.browser_use': 'Private key used from a browser',
  'webhook.created': 'Webhook endpoint added',
  'webhook.updated': 'Webhook endpoint changed',
  'webhook.deleted': 'Webhook endpoint removed',
  'member.created': 'Member added',
  'member.removed': 'Member removed',
  'member.joined': 'Member joined',
  'business.updated': 'Business settings changed',
  'analytics.erased': "A person's events erased",
}

/** What the services record in `changes`: every key field the trail follows, and a member's. */
type RecordedField =
  | (typeof AUDITED_FIELDS)[number]
  | 'type'
  | 'rolledFrom'
  | 'email'
  | 'role'
  | 'pending'
  | 'eventRetentionDays'
  | 'erasure'
  | 'deleted'
  | 'foundAt'
  | 'source'
  | 'action'
  | 'origin'

/** A label a member reads for every field (the type makes a new field without one fail to compile). */
const FIELDS: Record<RecordedField, string> = {
  name: 'Name',
  type: 'Type',
  description: 'Description',
  allowedOrigins: 'Allowed origins',
  originPolicy: 'Origins outside the list',
  allowedIps: 'Allowed IPs',
  ipPolicy: 'Addresses outside the list',
  scopes: 'Scopes',
  expiresAt: 'Expires',
  rateLimit: 'Rate limit',
  replacedBy: 'Replaced by',
  rolledFrom: 'Rolled from',
  revokedAt: 'Revoked',
  email: 'Email',
  pending: 'Pending',
  role: 'Role',
  eventRetentionDays: "Event retention (days; none: the operator's)",
  erasure: 'Erasure request',
  deleted: 'Events deleted',
  foundAt: 'Found at',
  source: 'Reported by',
  action: 'What the service did',
  origin: 'Browser origin',
}

/** Fields in the order of FIELDS (JSON columns keep no order of their own); others after them. */
function fieldRank(field: string): number {
  const rank = Object.keys(FIELDS).indexOf(field)
  return rank === -1 ? Number.MAX_SAFE_INTEGER : rank
}

/** The two policies' values, as the key forms word them. */
const POLICIES: Record<string, string> = { enforce: 'refused', report: 'served and reported (report only)' }

/** A field's label; a field recorded by some later change without one reads as words, never as a raw name. */
export function fieldLabel(field: string): string {
  if (field in FIELDS) return FIELDS[field as RecordedField]
  const words = field.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase()
  return words.charAt(0).toUpperCase() + words.slice(1)
}

const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/

export function actorText(actor: string): string {
  if (actor === 'admin') return 'an operator (admin API)'
  if (actor.startsWith('key:')) return 'an API key'
  if (actor === 'service') return 'the service'
  return actor.startsWith('member:') ? actor.slice('member:'.length) : actor
}

/** A value of a change as a member reads it: lists, limits and times spelled out; nothing is "null". */
function value(field: string, v: unknown, keys: Map<string, KeyRecord>): Html {
  if (v === null || v === undefined || (Array.isArray(v) && v.length === 0)) return html`<span class="muted">none</span>`
  if (Array.isArray(v)) return html`${v.map((item, i) => html`${i > 0 ? ' ' : ''}<code>${String(item)}</code>`)}`
  if (field === 'rateLimit' && typeof v === 'object') {
    const { limit, windowSeconds } = v as { limit: number; windowSeconds: number }
    return html`${limit} per ${windowSeconds} s`
  }
  if ((field === 'originPolicy' || field === 'ipPolicy') && typeof v === 'string' && v in POLICIES) return html`${POLICIES[v]}`
  if ((field === 'replacedBy' || field === 'rolledFrom') && typeof v === 'string') {
    const key = keys.get(v)
    return html`<a href="${KEYS_PATH}/${v}">${key ? html`${key.name} <code>${key.keyHint}</code>` : 'a key'}</a>`
  }
  if (typeof v === 'string' && ISO_INSTANT.test(v)) return html`<time datetime="${v}">${formatDateTime(new Date(v))}</time>`
  if (typeof v === 'string') return html`<code>${v}</code>`
  return html`<code>${JSON.stringify(v)}</code>`
}

/**
 * A list that changed (origins, IPs, scopes): what was added and what was removed, and how
 * many entries stayed, rather than the whole old list struck through and the new one after it.
 */
function listChange(from: unknown[], to: unknown[]): Html {
  const before = new Set(from.map(String))
  const after = new Set(to.map(String))
  const added = [...after].filter((e) => !before.has(e))
  const removed = [...before].filter((e) => !after.has(e))
  const kept = [...after].filter((e) => before.has(e)).length
  return html`${added.map((e) => html`<ins class="added"><span class="visually-hidden">added </span><code>+ ${e}</code></ins> `)}${removed.map(
    (e) => html`<del class="removed"><span class="visually-hidden">removed </span><code>− ${e}</code></del> `,
  )}${kept > 0 ? html`<span class="muted small">(${kept} unchanged)</span>` : null}`
}

function changesTable(entry: AuditEntryRow, keys: Map<string, KeyRecord>): Html {
  const changes = entry.changes as FieldChanges
  const fields = Object.keys(changes)
  if (fields.length === 0) return html``
  const created = entry.action === 'key.created' || entry.action === 'member.created'
  // A new key's policies at their default ("refused") say nothing; a public key has no addresses at all.
  const shown = (
    created ? fields.filter((f) => !((f === 'originPolicy' || f === 'ipPolicy') && changes[f]!.to === 'enforce')) : fields
  ).sort((a, b) => fieldRank(a) - fieldRank(b))
  return html`<table class="changes">
  <tbody>${shown.map((field) => {
    const { from, to } = changes[field]!
    const cell = created
      ? html`<span class="to">${value(field, to, keys)}</span>`
      : Array.isArray(from) && Array.isArray(to)
        ? listChange(from, to)
        : html`<span class="from">${value(field, from, keys)}</span> <span class="arrow" aria-label="to">→</span> <span class="to">${value(field, to, keys)}</span>`
    return html`<tr><th scope="row">${fieldLabel(field)}</th><td>${cell}</td></tr>`
  })}</tbody>
</table>`
}

/** The trail, newest first: when, who, what, and each changed field from → to. */
export function auditList(entries: AuditEntryRow[], keys: Map<string, KeyRecord>, now: Date, showKey: boolean): Html {
  if (entries.length === 0) return html`<p class="muted">No changes recorded yet.</p>`
  return html`<ol class="trail">${entries.map((entry) => {
    const key = entry.keyId ? keys.get(entry.keyId) : undefined
    return html`<li class="entry" data-action="${entry.action}">
  <div class="entry-head">
    <strong>${ACTIONS[entry.action]}</strong>
    ${showKey && entry.keyId ? html`<a href="${KEYS_PATH}/${entry.keyId}">${key ? html`${key.name} <code>${key.keyHint}</code>` : 'a key'}</a>` : null}
    <span class="muted">by ${actorText(entry.actor)}</span>
    <time datetime="${entry.at.toISOString()}" title="${formatDateTime(entry.at)}" class="muted small">${relativeTime(entry.at, now)} · ${formatDateTime(entry.at)}</time>
  </div>
  ${changesTable(entry, keys)}
</li>`
  })}</ol>`
}

export function auditPage(
  who: SignedIn,
  view: { entries: AuditEntryRow[]; keys: Map<string, KeyRecord>; now: Date; next: string | null; key?: KeyRecord; first: boolean },
): Html {
  const self = view.key ? `${KEYS_PATH}/${view.key.id}/audit` : AUDIT_PATH
  const crumbs: Crumb[] = view.key
    ? keyCrumbs({ label: view.key.name, href: `${KEYS_PATH}/${view.key.id}` }, { label: 'Audit trail' })
    : [{ label: 'Settings' }, { label: 'Business' }, { label: 'Audit trail', href: AUDIT_PATH }]
  return layout({
    title: view.key ? `Audit trail of ${view.key.name}` : `Audit trail of ${who.businessName}`,
    who,
    crumbs,
    content: html`<h1>${view.key ? html`Audit trail of <q>${view.key.name}</q>` : html`Audit trail of ${who.businessName}`}</h1>
<p class="lead">Every change to ${view.key ? html`this key of ${who.businessName}` : html`the keys and members of ${who.businessName}`}, newest first: who made it, when,
and each changed field from its old value to its new one. Entries cannot be changed or deleted.</p>
<section class="panel">${auditList(view.entries, view.keys, view.now, !view.key)}</section>
<p class="button-row">${view.first ? null : html`<a class="button" href="${self}">Newest</a>`}${view.next ? html`<a class="button" href="${self}?cursor=${view.next}">Older</a>` : null}</p>`,
  })
}

/** The last few changes of a key, on its page. */
export function keyTrailPanel(key: KeyRecord, entries: AuditEntryRow[], keys: Map<string, KeyRecord>, now: Date, more: boolean): Html {
  return html`<section class="panel" aria-labelledby="trail-heading" id="trail">
  <h2 id="trail-heading">Changes</h2>
  ${auditList(entries, keys, now, false)}
  ${more ? html`<p><a href="${KEYS_PATH}/${key.id}/audit">The whole trail of this key</a></p>` : null}
</section>`
}
