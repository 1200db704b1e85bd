import { copyField } from './copy-field.ts'
import { html, type Html } from './html.ts'
import type { SignedIn } from './sessions.ts'
import { BUSINESS_PATH, csrfField, layout } from './views.ts'

const NODE_EXAMPLE = `import { createHmac } from 'node:crypto'
// user.id as your page sends it in externalId (or the lower-cased email)
const identityHash = createHmac('sha256', process.env.KEYGATE_IDENTITY_SECRET)
  .update(user.id).digest('hex')`

/**
 * The business's settings: the identity secret. The secret is shown
 * once, in the answer that sets it; afterwards the page only says whether one is set.
 */
/** How long the business's events are kept: its own days (null: the operator's), and a form sent back with its error. */
export interface RetentionView {
  own: number | null
  effective: number
  operatorDays: number
  form?: { value: string; error: string }
}

export function businessPage(who: SignedIn, view: { hasSecret: boolean; secret?: string; flash?: Html; retention: RetentionView }): Html {
  const owner = who.role === 'owner'
  const retention = view.retention
  return layout({
    title: 'Business settings',
    who,
    crumbs: [{ label: 'Settings' }, { label: 'Business' }, { label: 'Identity secret', href: BUSINESS_PATH }],
    content: html`<h1>Identity secret</h1>
<p class="lead">Your servers sign each signed-in person's identifier with this secret; pages send that
<code>identityHash</code> with the person, and only then may a public key update a stored person
(or, once a secret is set, remove one from a list).</p>
${view.flash ?? null}
${
  view.secret
    ? html`<section class="panel warning" aria-labelledby="secret-heading" id="new-secret">
  <h2 id="secret-heading">Your new identity secret</h2>
  <p><strong>Copy it now: it is shown only this once.</strong> Store it on your servers (an environment variable,
  e.g. <code>KEYGATE_IDENTITY_SECRET</code>), never in a page.</p>
  ${copyField({ id: 'secret-value', label: 'Identity secret', value: view.secret, button: 'Copy secret', labelHidden: true })}
</section>`
    : null
}
<section class="panel" aria-labelledby="status-heading">
  <h2 id="status-heading">Status</h2>
  <p id="secret-status">${
    view.hasSecret
      ? html`<span class="badge active">Set</span> ${who.businessName} has an identity secret. It is not shown again; rotate it to get a new one.`
      : html`<span class="badge expired">Not set</span> Public keys of ${who.businessName} create people but never change stored ones.`
  }</p>
  ${
    owner
      ? html`<details class="allow">
    <summary class="button${view.hasSecret ? '' : ' primary'}">${view.hasSecret ? 'Rotate the secret' : 'Set a secret'}</summary>
    <div class="allow-preview">
      <p>${
        view.hasSecret
          ? 'The current secret stops working at once: hashes your servers compute with it no longer verify until they use the new one.'
          : 'A new secret is made and shown once. From then on, public-key removals from lists need a valid hash too.'
      }</p>
      <form method="post" action="${BUSINESS_PATH}/identity-secret">
        ${csrfField(who)}
        <button type="submit" class="button ${view.hasSecret ? 'danger' : 'primary'} small">${view.hasSecret ? 'Confirm: rotate the secret' : 'Confirm: set a secret'}</button>
      </form>
    </div>
  </details>`
      : html`<p class="muted">Only owners of the business set or rotate the secret.</p>`
  }
</section>
<section class="panel" aria-labelledby="retention-heading" id="retention">
  <h2 id="retention-heading">Event retention</h2>
  <p id="retention-status">Events of ${who.businessName} are kept <strong>${retention.effective} days</strong>${
    retention.own === null
      ? html` (the service's setting)`
      : html` (set for this business; the service allows up to ${retention.operatorDays})`
  }. Older events are no longer shown or answered, and leave storage within an hour.</p>
  ${
    owner
      ? html`<form method="post" action="${BUSINESS_PATH}/retention" class="stack">
    ${csrfField(who)}
    ${retention.form ? html`<div class="alert error" role="alert" id="retention-error">${retention.form.error}</div>` : null}
    <label for="event-retention-days">Days to keep events (1-${retention.operatorDays}; empty: the service's ${retention.operatorDays})</label>
    <input id="event-retention-days" name="eventRetentionDays" type="number" min="1" max="${retention.operatorDays}" step="1" inputmode="numeric"
      value="${retention.form ? retention.form.value : retention.own === null ? '' : String(retention.own)}"${retention.form ? html` aria-invalid="true" aria-describedby="retention-error"` : null}>
    <button type="submit" class="button primary small">Save retention</button>
  </form>`
      : html`<p class="muted">Only owners of the business change how long events are kept.</p>`
  }
</section>
<section class="panel" aria-labelledby="how-heading">
  <h2 id="how-heading">Computing the hash on your server</h2>
  <p class="hint">The lower-case hex HMAC-SHA256 of the person's <code>externalId</code> (or, without one, their lower-cased email):</p>
  <pre class="code"><code>${NODE_EXAMPLE}</code></pre>
  <p class="hint">Then, in the page: <code>keygate.identify({ externalId: user.id, identityHash })</code>.</p>
</section>`,
  })
}
