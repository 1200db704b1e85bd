import type { KeyLeak } from '../../db/schema/index.ts'
import type { LeakNotice } from '../leaks/notices.ts'
import type { DisabledEndpoint } from '../webhooks/endpoints.ts'
import { formatDateTime } from './format.ts'
import { html, type Html } from './html.ts'

// The banners every page of a business shows while something needs a member: a leaked key,
// a webhook endpoint disabled after failing. The layout (./views.ts) gives them its paths.

/** Where a report says the key was found: a link only for a web address (a report is anyone's text). */
function foundAt(url: string | null): Html {
  if (url === null) return html`an unnamed place`
  return /^https?:\/\//i.test(url) ? html`<a href="${url}" rel="noopener noreferrer nofollow">${url}</a>` : html`<code>${url}</code>`
}

function reporter(source: string): Html {
  return source === 'report'
    ? html`reported by someone who found it`
    : html`found by GitHub secret scanning (${source.replaceAll('_', ' ')})`
}

/** The banner on every page while an endpoint stands disabled after failing (docs/webhooks.md, "Retries"). */
export function disabledEndpointsBanner(notices: readonly DisabledEndpoint[], endpointPath: (id: string) => string): Html | null {
  if (notices.length === 0) return null
  return html`<div class="alert error" role="alert" id="webhooks-disabled"><p><strong>${notices.length === 1 ? 'A webhook endpoint was' : `${notices.length} webhook endpoints were`} disabled after failing for 5 days</strong>:
  ${notices.map((n, i) => html`${i > 0 ? ', ' : ''}<a href="${endpointPath(n.id)}"><code class="break">${n.url}</code></a>`)}. Nothing is sent to ${notices.length === 1 ? 'it' : 'them'} until it is enabled again.</p></div>`
}

/** A key's page: where it was found and what the service did, for as long as the key exists. */
export function leakPanel(leak: KeyLeak): Html {
  return html`<div class="alert error" role="note" id="leak-notice"><p><strong>Found in a public place</strong>: ${foundAt(leak.url)},
  ${reporter(leak.source)}, <time datetime="${leak.reportedAt}">${formatDateTime(new Date(leak.reportedAt))}</time>.
  ${leak.action === 'revoked' ? 'The service revoked it at once.' : 'The service flagged it; it still works until it is rolled or revoked.'}</p></div>`
}

/**
 * The banner on every page while a leaked key's notice stands (docs/dashboard.md, "Leaked
 * keys"): where and when it was found, what the service did, a one-click roll for owners
 * (the new key is shown once), and a dismissal for any member. `keyPath` and `formFields`
 * come from the layout, which owns the dashboard's paths and the CSRF fields.
 */
export function leakBanner(
  notices: readonly LeakNotice[],
  view: { owner: boolean; keyPath: (id: string, action?: string) => string; formFields: Html },
): Html | null {
  if (notices.length === 0) return null
  return html`${notices.map(
    (notice) => html`<div class="alert error leak-banner" role="alert" id="leak-${notice.keyId}">
  <p><strong>The private key <a href="${view.keyPath(notice.keyId)}">${notice.name}</a> <code>${notice.keyHint}</code> was found in a public place</strong>:
  ${foundAt(notice.leak.url)}, ${reporter(notice.leak.source)}, <time datetime="${notice.leak.reportedAt}">${formatDateTime(new Date(notice.leak.reportedAt))}</time>.
  ${
    notice.leak.action === 'revoked'
      ? html`It was revoked at once: requests with it are refused.`
      : html`<strong>It still works</strong> (the service only flags leaked keys): anyone who copied it can use it until it is rolled.`
  }
  ${
    notice.replacedBy !== null
      ? html`It has been rolled: <a href="${view.keyPath(notice.replacedBy)}">the new key</a>.`
      : view.owner
        ? html`Roll it: a new key with the same scopes and allowed IPs replaces it, shown once, and the old one stops working.`
        : html`An owner of the business can roll it here.`
  }</p>
  <div class="button-row">
    ${
      notice.replacedBy === null && view.owner
        ? html`<form method="post" action="${view.keyPath(notice.keyId, 'leak/roll')}">${view.formFields}<button type="submit" class="button primary">Roll the key</button></form>`
        : null
    }
    <form method="post" action="${view.keyPath(notice.keyId, 'leak/dismiss')}">${view.formFields}<button type="submit" class="button">Dismiss</button></form>
  </div>
</div>`,
  )}`
}
