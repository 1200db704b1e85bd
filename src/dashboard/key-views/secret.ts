import type { KeyRecord } from '../../keys/service.ts'
import { copyField } from '../copy-field.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { keyCrumbs, layout } from '../views.ts'
import { keyPath } from './parts.ts'

/**
 * A new private key, shown this once: the service keeps only its digest, so the page says
 * so, offers a copy button, and is never cached (the route's answer says no-store).
 */
export function newSecretPage(who: SignedIn, record: KeyRecord, key: string, replaced: KeyRecord | null): Html {
  return layout({
    title: `New key for ${record.name}`,
    who,
    crumbs: keyCrumbs({ label: record.name, href: keyPath(record.id) }, { label: 'New key' }),
    content: html`<h1>Your new private key</h1>
<div class="alert warning" role="note" id="secret-warning"><p><strong>Copy it now: it is shown this once.</strong> The service keeps
only a digest of it and cannot show it again. Put it where your servers read their secrets, never in a web page, an app
or a repository.</p></div>
${replaced ? html`<p>It replaces <code>${replaced.keyHint}</code>, which no longer works.</p>` : null}
<section class="panel" aria-labelledby="secret-heading">
  <h2 id="secret-heading">${record.name} <span class="badge private">private</span></h2>
  ${copyField({ id: 'key-value', label: 'Private key', value: key, button: 'Copy key' })}
  <p><a class="button" href="${keyPath(record.id)}">I have stored it: go to the key</a></p>
</section>`,
  })
}
