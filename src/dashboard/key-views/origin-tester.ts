import type { OriginMatch } from '../../access/origin/index.ts'
import type { KeyRecord } from '../../keys/service.ts'
import { html, type Html } from '../html.ts'
import { keyPath, type KeyState } from './parts.ts'

export interface OriginTest {
  origin: string
  match: OriginMatch
}

/** The origin tester of a public key's page: the API's own matcher says whether an origin would pass. */
export function originTester(key: KeyRecord, usable: boolean, state: KeyState, test?: OriginTest): Html {
  return html`<section class="panel" aria-labelledby="tester-heading">
  <h2 id="tester-heading">Origin tester</h2>
  <p class="hint">Would a request from this origin be accepted? The same matcher as the API decides.
  Browsers send origins as <code>scheme://host[:port]</code>, e.g. <code>https://www.example.com</code>;
  leave the field empty to test a request without an <code>Origin</code> header.</p>
  <form method="get" action="${keyPath(key.id)}" class="inline-form" data-origin-tester="${keyPath(key.id, 'origin-test')}">
    <label for="test-origin">Origin to test</label>
    <input id="test-origin" name="origin" type="text" inputmode="url" spellcheck="false" autocomplete="off"
      placeholder="https://www.example.com" value="${test?.origin ?? ''}" aria-describedby="tester-result">
    <button type="submit" class="button">Test origin</button>
  </form>
  <div id="tester-result" class="tester-result" role="status" aria-live="polite">${test ? testerResult(test, usable, state) : null}</div>
</section>`
}

function testerResult(test: OriginTest, usable: boolean, state: KeyState): Html {
  const shown = test.origin === '' ? 'a request without an Origin header' : test.origin
  const caveat = usable
    ? null
    : html`<p class="small">Note: this key is ${state}, so every request is refused (401) whatever its origin.</p>`
  return test.match.allowed
    ? html`<div class="result ok"><p><strong>Accepted.</strong> The entry <code>${test.match.entry}</code> matches <code>${shown}</code>.</p>${caveat}</div>`
    : html`<div class="result refused"><p><strong>Refused</strong> (403 origin_not_allowed). ${test.match.reason}</p>${caveat}</div>`
}
