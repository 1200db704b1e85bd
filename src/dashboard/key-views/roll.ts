import type { KeyRecord } from '../../keys/service.ts'
import { html, type Html } from '../html.ts'
import type { SignedIn } from '../sessions.ts'
import { csrfField, keyCrumbs, layout } from '../views.ts'
import { keyPath } from './parts.ts'

/** Grace choices of the roll form, in seconds (a roll's grace is 0 to 7 days). */
export const ROLL_GRACES = [
  { seconds: 0, label: 'Now', hint: 'the old key is refused at once' },
  { seconds: 3600, label: '1 hour', hint: 'enough for a quick deploy' },
  { seconds: 86_400, label: '24 hours', hint: 'the usual choice: a day to deploy the new key' },
  { seconds: 604_800, label: '7 days', hint: 'for apps that take a release to update' },
] as const

/** The roll page: how long the old key keeps working. */
export function rollPage(who: SignedIn, key: KeyRecord, error?: string): Html {
  return layout({
    title: `Roll ${key.name}`,
    who,
    crumbs: keyCrumbs({ label: key.name, href: keyPath(key.id) }, { label: 'Roll' }),
    content: html`<h1>Roll <q>${key.name}</q></h1>
<p class="lead">Rolling creates a new key with the same name, origins, scopes and limits. The old key
<code>${key.keyHint}</code> keeps working for the grace you choose, so that pages still embedding it are not broken
while you deploy the new one; then it is refused as expired.</p>
${error ? html`<div class="alert error" role="alert" id="roll-error">${error}</div>` : null}
<form method="post" action="${keyPath(key.id, 'roll')}" class="stack key-form">
  ${csrfField(who)}
  <fieldset class="field">
    <legend>How long may the old key keep working?</legend>
    ${ROLL_GRACES.map(
      (grace) => html`<div class="checkbox">
      <input type="radio" id="grace-${grace.seconds}" name="graceSeconds" value="${grace.seconds}"${grace.seconds === 86_400 ? html` checked` : null}>
      <label for="grace-${grace.seconds}">${grace.label} <span class="muted">— ${grace.hint}</span></label>
    </div>`,
    )}
  </fieldset>
  <div class="button-row">
    <button type="submit" class="button primary">Roll key</button>
    <a class="button" href="${keyPath(key.id)}">Cancel</a>
  </div>
</form>`,
  })
}
