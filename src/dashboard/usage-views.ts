import { compileIpMatcher, parseIpEntry } from '../access/allowed-ips.ts'
import { networkOf } from '../shared/ip.ts'
import { compileOriginMatcher } from '../access/origin/index.ts'
import type { KeyRecord } from '../keys/service.ts'
import { NO_ORIGIN } from '../usage/recorder.ts'
import type { UsageReport } from '../usage/report.ts'
import { refusedTotal, usageChart, type ChartPoint } from './chart.ts'
import { formatDateTime, relativeTime } from './format.ts'
import { html, type Html } from './html.ts'
import { narrowestEntry } from './narrowest.ts'
import type { SignedIn } from './sessions.ts'
import { csrfField } from './views.ts'

export const USAGE_RANGES = ['24h', '7d'] as const
export type UsageRange = (typeof USAGE_RANGES)[number]

const HOUR = 3_600_000
const DAY = 86_400_000

/** The report's range: the last 24 hours by hour, or the last 7 days by day, the current period included. */
export function usageWindow(range: UsageRange, now: number): { from: number; to: number; interval: 'hour' | 'day' } {
  if (range === '7d') return { from: now - (now % DAY) - 6 * DAY, to: now, interval: 'day' }
  return { from: now - (now % HOUR) - 23 * HOUR, to: now, interval: 'hour' }
}

/** Scopes count as unused when not used for this long (issue 10). */
export const UNUSED_AFTER_MS = 30 * DAY

const WEEKDAY = new Intl.DateTimeFormat('en', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' })

function pathOf(keyId: string, action = ''): string {
  return `/dashboard/settings/developers/api-keys/${keyId}${action ? `/${action}` : ''}`
}

export function usagePanel(key: KeyRecord, report: UsageReport, range: UsageRange): Html {
  const points: ChartPoint[] = report.series.map((p) => {
    const at = new Date(p.at)
    return {
      at,
      label: range === '7d' ? WEEKDAY.format(at) : `${p.at.slice(11, 13)}:00`,
      accepted: p.accepted,
      refused: refusedTotal(p),
    }
  })
  const accepted = points.reduce((sum, p) => sum + p.accepted, 0)
  const byCode: Record<string, number> = {}
  for (const p of report.series) for (const [code, n] of Object.entries(p.refused)) byCode[code] = (byCode[code] ?? 0) + n
  const refused = Object.values(byCode).reduce((sum, n) => sum + n, 0)
  const span = range === '7d' ? 'the last 7 days, by day' : 'the last 24 hours, by hour'
  return html`<section class="panel" aria-labelledby="usage-heading" id="usage">
  <div class="panel-head">
    <h2 id="usage-heading">Requests</h2>
    <nav class="filters" aria-label="Period">
      <a href="${pathOf(key.id)}?range=24h#usage"${range === '24h' ? html` aria-current="page"` : null}>Last 24 hours</a>
      <a href="${pathOf(key.id)}?range=7d#usage"${range === '7d' ? html` aria-current="page"` : null}>Last 7 days</a>
    </nav>
  </div>
  <p class="totals" id="usage-totals">
    <span class="swatch accepted" aria-hidden="true"></span> Accepted <strong>${accepted}</strong>
    <span class="swatch refused" aria-hidden="true"></span> Refused <strong>${refused}</strong>
    ${
      refused > 0
        ? html`<span class="muted small">(${Object.entries(byCode)
            .sort((a, b) => b[1] - a[1])
            .map(([code, n], i) => html`${i > 0 ? ', ' : ''}<code>${code}</code> ${n}`)})</span>`
        : null
    }
    <span class="muted small">over ${span} (UTC)</span>
  </p>
  ${usageChart(points, `Accepted and refused requests over ${span}: ${accepted} accepted, ${refused} refused.`, range === '7d' ? 1 : 3)}
  <details class="numbers">
    <summary>The numbers as a table</summary>
    <table class="keys compact">
      <thead><tr><th scope="col">${range === '7d' ? 'Day' : 'Hour'} (UTC)</th><th scope="col">Accepted</th><th scope="col">Refused</th></tr></thead>
      <tbody>${points.map((p) => html`<tr><th scope="row">${range === '7d' ? p.label : `${p.at.toISOString().slice(0, 10)} ${p.label}`}</th><td>${p.accepted}</td><td>${p.refused}</td></tr>`)}</tbody>
    </table>
  </details>
  <p class="hint">A request counts once, under its final answer; counts reach this page within about 15 seconds.</p>
</section>`
}

/** Refused origins of a public key, each with a one-click "Allow" and a preview of the list it makes. */
export function refusedOriginsPanel(who: SignedIn, key: KeyRecord, report: UsageReport, now: Date, range: UsageRange): Html {
  const editable = key.type === 'public' && !key.revokedAt
  const matcher = compileOriginMatcher(key.allowedOrigins)
  return html`<section class="panel" aria-labelledby="refused-heading" id="refused-origins">
  <h2 id="refused-heading">Refused origins</h2>
  ${
    report.refusedOrigins.length === 0
      ? html`<p class="muted">No request was refused for its origin in ${range === '7d' ? 'the last 7 days' : 'the last 24 hours'}.</p>`
      : html`<p class="hint">Origins the allowed list did not allow${key.originPolicy === 'report' ? ' (served anyway while the key is report-only)' : ''}, most frequent first.
  <strong>Allow</strong> adds the narrowest entry covering that origin: exactly its scheme, host and port.</p>
  <div class="table-wrap"><table class="keys compact">
    <thead><tr><th scope="col">Origin</th><th scope="col">Requests</th><th scope="col">Last seen</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody>${report.refusedOrigins.map((o) => {
      const narrow = narrowestEntry(o.origin)
      const allowedNow = matcher.match(o.origin === NO_ORIGIN ? null : o.origin)
      return html`<tr>
      <th scope="row"><code>${o.origin}</code>${o.reported ? html` <span class="badge report">served: report only</span>` : null}</th>
      <td>${o.count}</td>
      <td><time datetime="${o.lastSeenAt}" title="${formatDateTime(new Date(o.lastSeenAt))}">${relativeTime(new Date(o.lastSeenAt), now)}</time></td>
      <td>${
        !editable
          ? null
          : allowedNow.allowed
            ? html`<span class="muted small">Allowed now by <code>${allowedNow.entry}</code></span>`
            : narrow.ok
              ? allowPreview(who, {
                  action: pathOf(key.id, 'allow-origin'),
                  field: { name: 'origin', value: o.origin },
                  target: o.origin,
                  effect: html`Adds <code>${narrow.entry}</code>: requests from exactly <code>${o.origin}</code> are then accepted.`,
                  list: { name: 'allowed origins', entries: key.allowedOrigins },
                  entry: narrow.entry,
                })
              : html`<span class="muted small">${narrow.reason}</span>`
      }</td>
    </tr>`
    })}</tbody>
  </table></div>${othersNote(report.refusedOriginsOther, 'origins')}`
  }
</section>`
}

/**
 * A private key sent with an Origin header came from a web page (docs/api.md, "When a key
 * leaks"): its origins, kept as origins the key does not allow and served. Nothing when it
 * was not used from a browser in the range.
 */
export function browserUsePanel(key: KeyRecord, report: UsageReport, now: Date, range: UsageRange): Html | null {
  if (key.type !== 'private' || report.refusedOrigins.length === 0) return null
  const last = report.refusedOrigins.reduce(
    (latest, o) => (o.lastSeenAt > latest ? o.lastSeenAt : latest),
    report.refusedOrigins[0]!.lastSeenAt,
  )
  return html`<section class="panel" aria-labelledby="browser-heading" id="browser-use">
  <h2 id="browser-heading">Used from a browser</h2>
  <div class="alert warning" role="note"><p><strong>This private key was sent from a web page</strong> in ${range === '7d' ? 'the last 7 days' : 'the last 24 hours'},
  last <time datetime="${last}" title="${formatDateTime(new Date(last))}">${relativeTime(new Date(last), now)}</time>. Whoever opens that page can read it.
  Move the calls to your server, then roll the key.</p></div>
  <div class="table-wrap"><table class="keys compact">
    <thead><tr><th scope="col">Origin</th><th scope="col">Requests</th><th scope="col">Last seen</th></tr></thead>
    <tbody>${report.refusedOrigins.map(
      (o) => html`<tr>
      <th scope="row"><code>${o.origin}</code></th>
      <td>${o.count}</td>
      <td><time datetime="${o.lastSeenAt}" title="${formatDateTime(new Date(o.lastSeenAt))}">${relativeTime(new Date(o.lastSeenAt), now)}</time></td>
    </tr>`,
    )}</tbody>
  </table></div>${othersNote(report.refusedOriginsOther, 'origins')}
</section>`
}

/** "And N others": refusals the report counts but does not name (beyond the 50, or past an hour's bound). */
function othersNote(count: number, what: string): Html | null {
  return count > 0 ? html`<p class="muted small">And ${count} more ${count === 1 ? 'request' : 'requests'} from other ${what}.</p>` : null
}

/**
 * A one-click "Allow", confirmed in place: what it does, the whole list it makes, and the
 * form that posts it. `target` is what the buttons name: the origin, address or network.
 */
function allowPreview(
  who: SignedIn,
  allow: {
    action: string
    field: { name: string; value: string }
    target: string
    effect: Html
    warning?: Html
    /** The list the entry joins, shown whole with the entry added. */
    list: { name: string; entries: readonly string[] }
    entry: string
    /** The visible label; the target is added for screen readers when the label does not show it. */
    label?: string
  },
): Html {
  return html`<details class="allow">
  <summary class="button small">${allow.label ?? html`Allow<span class="visually-hidden"> ${allow.target}</span>`}</summary>
  <div class="allow-preview">
    ${allow.warning ?? null}
    <p>${allow.effect} The ${allow.list.name} become:</p>
    <ul class="plain preview-list">${allow.list.entries.map((e) => html`<li><code>${e}</code></li>`)}<li class="added"><code>${allow.entry}</code> <span class="badge active">new</span></li></ul>
    <form method="post" action="${allow.action}">
      ${csrfField(who)}
      <input type="hidden" name="${allow.field.name}" value="${allow.field.value}">
      <button type="submit" class="button primary small">Confirm: allow ${allow.target}</button>
    </form>
  </div>
</details>`
}

/**
 * A scope unused for 30 days (issue 10): last used before then, or never used by a key that
 * has existed that long. A younger key's unused scopes are only "not used yet": offering to
 * strip every scope of a key created a minute ago would be noise, not least privilege.
 */
export function isUnused(lastUsedAt: string | null, key: { createdAt: string }, now: Date): boolean {
  const since = lastUsedAt ?? key.createdAt
  return now.getTime() - new Date(since).getTime() > UNUSED_AFTER_MS
}

/** Each scope with its last use; those unused for 30 days offer a one-click "Remove" (confirmed in place). */
export function scopesPanel(who: SignedIn, key: KeyRecord, report: UsageReport, now: Date): Html {
  const editable = !key.revokedAt
  const unused = report.scopes.filter((s) => isUnused(s.lastUsedAt, key, now))
  return html`<section class="panel" aria-labelledby="scopes-heading" id="scopes">
  <h2 id="scopes-heading">Scopes and their last use</h2>
  <p class="hint">${
    unused.length === 0
      ? report.scopes.some((s) => s.lastUsedAt === null)
        ? 'This key is less than 30 days old: a scope it has not used by then will be offered for removal.'
        : 'Every scope of this key was used in the last 30 days.'
      : html`A key should hold only what it uses: ${unused.length === 1 ? 'one scope was' : `${unused.length} scopes were`} not used in the last 30 days.`
  }</p>
  <div class="table-wrap"><table class="keys compact">
    <thead><tr><th scope="col">Scope</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody>${report.scopes.map((s) => {
      const idle = isUnused(s.lastUsedAt, key, now)
      return html`<tr${idle ? html` class="unused"` : null}>
      <th scope="row"><code>${s.scope}</code>${idle ? html` <span class="badge expired" title="Not used in the last 30 days">Unused</span>` : null}</th>
      <td>${s.lastUsedAt ? html`<time datetime="${s.lastUsedAt}" title="${formatDateTime(new Date(s.lastUsedAt))}">${relativeTime(new Date(s.lastUsedAt), now)}</time>` : idle ? 'never' : html`<span class="muted">not used yet</span>`}</td>
      <td>${
        !idle || !editable
          ? null
          : key.scopes.length === 1
            ? html`<span class="muted small">A key needs at least one scope; revoke the key if it is not needed.</span>`
            : removeScope(who, key, s.scope)
      }</td>
    </tr>`
    })}</tbody>
  </table></div>
</section>`
}

function removeScope(who: SignedIn, key: KeyRecord, scope: string): Html {
  return html`<details class="allow">
  <summary class="button small">Remove<span class="visually-hidden"> ${scope}</span></summary>
  <div class="allow-preview">
    <p>Requests that need <code>${scope}</code> are then refused (403 <code>insufficient_scope</code>). The scopes become:</p>
    <ul class="plain preview-list">${key.scopes.map((s) => (s === scope ? html`<li class="removed"><code>${s}</code> <span class="badge revoked">removed</span></li>` : html`<li><code>${s}</code></li>`))}</ul>
    <form method="post" action="${pathOf(key.id, 'remove-scope')}">
      ${csrfField(who)}
      <input type="hidden" name="scope" value="${scope}">
      <button type="submit" class="button danger small">Confirm: remove ${scope}</button>
    </form>
  </div>
</details>`
}

/**
 * Client addresses a private key's allowedIps refused, each with
 * two one-click "Allow"s: the address itself, and its network (its /24 or /64: one site's
 * addresses, for servers that change address within it). Revoked keys offer none.
 */
export function refusedIpsPanel(who: SignedIn, key: KeyRecord, report: UsageReport, now: Date, range: UsageRange): Html {
  const matcher = compileIpMatcher(key.allowedIps)
  return html`<section class="panel" aria-labelledby="refused-ips-heading" id="refused-ips">
  <h2 id="refused-ips-heading">Refused addresses</h2>
  ${
    report.refusedIps.length === 0
      ? html`<p class="muted">No request was refused for its client address in ${range === '7d' ? 'the last 7 days' : 'the last 24 hours'}.</p>`
      : html`<p class="hint">Client addresses the allowed IPs did not allow${key.ipPolicy === 'report' ? ' (served anyway while the key is report-only)' : ''}, most frequent first.
  <strong>Allow</strong> adds the address itself, or its network: its /24 for IPv4, its /64 for IPv6.</p>
  <div class="table-wrap"><table class="keys compact">
    <thead><tr><th scope="col">Address</th><th scope="col">Requests</th><th scope="col">Last seen</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody>${report.refusedIps.map(
      (o) => html`<tr>
      <th scope="row"><code>${o.ip}</code>${o.reported ? html` <span class="badge report">served: report only</span>` : null}</th>
      <td>${o.count}</td>
      <td><time datetime="${o.lastSeenAt}" title="${formatDateTime(new Date(o.lastSeenAt))}">${relativeTime(new Date(o.lastSeenAt), now)}</time></td>
      <td>${
        key.revokedAt
          ? null
          : matcher?.allows(o.ip)
            ? html`<span class="muted small">Allowed now by <code>${key.allowedIps.find((e) => compileIpMatcher([e])?.allows(o.ip))}</code></span>`
            : allowIpChoices(who, key, o.ip)
      }</td>
    </tr>`,
    )}</tbody>
  </table></div>${othersNote(report.refusedIpsOther, 'addresses')}`
  }
</section>`
}

/** "Allow" the address, and "Allow" its network; each previews the list it makes. */
function allowIpChoices(who: SignedIn, key: KeyRecord, address: string): Html {
  const single = parseIpEntry(address)
  const network = networkOf(address)
  const choices = [
    ...(single.ok ? [{ entry: single.entry, effect: html`requests from exactly this address are then served.` }] : []),
    ...(network
      ? [{ entry: network, effect: html`requests from any address of this network, <code>${address}</code> included, are then served.` }]
      : []),
  ]
  // Adding to an empty list is not one more address: it turns the restriction on.
  const warning =
    key.allowedIps.length === 0
      ? html`<p class="alert warning"><strong>The list is empty now: this key works from any address.</strong> Adding this entry turns the
    restriction on, and requests from every other address are then ${key.ipPolicy === 'report' ? 'counted here (served while the key is report-only)' : html`refused (403 <code>ip_not_allowed</code>)`}.</p>`
      : undefined
  return html`<div class="allow-choices">${choices.map(({ entry, effect }) =>
    allowPreview(who, {
      action: pathOf(key.id, 'allow-ip'),
      field: { name: 'entry', value: entry },
      target: entry,
      label: `Allow ${entry}`,
      effect: html`Adds <code>${entry}</code>: ${effect}`,
      warning,
      list: { name: 'allowed IPs', entries: key.allowedIps },
      entry,
    }),
  )}</div>`
}
