import type { KeyRecord } from '../../keys/service.ts'
import { formatDate, formatDateTime, relativeTime } from '../format.ts'
import { html, type Html } from '../html.ts'

// What the key pages share: a key's state and the list's filters, the pages' paths, and
// the badge, dates and lists they show a key with.

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

/** Whether the dashboard offers to roll the key (the service says 409 otherwise). */
export function canRoll(key: KeyRecord, now: Date): boolean {
  return key.type === 'public' && keyCategory(key, now) === 'active'
}

export { keyPath } from '../views.ts'

export function stateBadge(state: KeyState): Html {
  if (state === 'revoked') return html`<span class="badge revoked">Revoked</span>`
  if (state === 'expired') return html`<span class="badge expired">Expired</span>`
  return html`<span class="badge active">Active</span>`
}

export function time(at: string, text: string): Html {
  return html`<time datetime="${at}" title="${formatDateTime(new Date(at))}">${text}</time>`
}

export function lastUsed(key: KeyRecord, now: Date): Html | string {
  return key.lastUsedAt ? time(key.lastUsedAt, relativeTime(new Date(key.lastUsedAt), now)) : 'never'
}

export function expiry(key: KeyRecord, now: Date, short = false): Html | string {
  if (!key.expiresAt) return 'never'
  const at = new Date(key.expiresAt)
  const when = time(key.expiresAt, short ? formatDate(at) : formatDateTime(at))
  return at.getTime() <= now.getTime()
    ? html`${when} <span class="badge expired">expired</span>`
    : html`${when} <span class="muted small">(${relativeTime(at, now)})</span>`
}

export function list(items: readonly string[], empty: string): Html {
  if (items.length === 0) return html`<span class="muted">${empty}</span>`
  return html`<ul class="plain">${items.map((i) => html`<li><code>${i}</code></li>`)}</ul>`
}
