import type { KeyRecord } from '../../keys/service.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { csrfField, keyCrumbs, layout } from '../views.ts'
import { canRoll, keyPath } from './parts.ts'

/** The revoke page: what revoking ends, and the roll offered instead where it fits. */
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
