/**
 * HTML from template literals with escaping by default: every interpolated value is
 * escaped unless it is itself `Html` (built by `html` or `raw`). Arrays are joined, and
 * `null`, `undefined` and `false` render nothing, so conditionals read naturally.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[]

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

function render(part: Part): string {
  if (part === null || part === undefined || part === false || part === true) return ''
  if (part instanceof Html) return part.value
  if (Array.isArray(part)) return part.map(render).join('')
  return escapeHtml(String(part))
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!
  return new Html(out)
}

/** Trusted markup only (constants of this module's callers), never user input. */
export function raw(markup: string): Html {
  return new Html(markup)
}
