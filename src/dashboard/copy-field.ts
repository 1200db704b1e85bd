import { html, type Html } from './html.ts'

/**
 * A value shown to be copied (a key or secret shown once, a sign-in link): a read-only
 * field, the Copy button the page's script wires (`data-copy`), and where it says it copied.
 */
export function copyField(field: { id: string; label: string; value: string; button: string; labelHidden?: boolean }): Html {
  return html`<div class="field">
    <label for="${field.id}"${field.labelHidden ? html` class="visually-hidden"` : null}>${field.label}</label>
    <div class="copy-row">
      <input id="${field.id}" type="text" readonly value="${field.value}" spellcheck="false" autocomplete="off">
      <button type="button" class="button" data-copy="${field.id}">${field.button}</button>
    </div>
  </div>
  <p class="copy-status" role="status" aria-live="polite"></p>`
}
