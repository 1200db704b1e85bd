import { t } from 'elysia'
import { readBodyBytes } from '../http/request-body.ts'
import type { KeyType } from '../access/key-format.ts'
import { PUBLIC_KEY_SCOPES } from '../access/scopes.ts'
import type { FieldProblem, KeySettingsInput } from '../keys/rules.ts'
import type { KeyFormErrors, KeyFormValues } from './key-views/form.ts'

/** The entries of a list box (allowed origins, allowed IPs): one per line, blank lines ignored. */
export function entryLines(text: string): string[] {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '')
}

/**
 * One field of a form body (parsed by Elysia's urlencoded parser): optional, as a browser
 * leaves out what is unchecked, and bounded, so a huge field is refused before any rule.
 */
export const FormField = t.Optional(t.String({ maxLength: 64 * 1024 }))
/** A field a form repeats (checkboxes): one value arrives as a string, several as a list. */
export const RepeatedFormField = t.Optional(t.Union([FormField, t.Array(t.String({ maxLength: 1000 }), { maxItems: 100 })]))

/** A form whose only field is the session's token (the `member` macro checks it). */
export const TokenOnlyForm = t.Object({ csrf: FormField })

export const KeyForm = t.Object({
  csrf: FormField,
  name: FormField,
  description: FormField,
  origins: FormField,
  scopes: RepeatedFormField,
  expiresOn: FormField,
  rateLimitLimit: FormField,
  rateLimitWindow: FormField,
  reportOnly: FormField,
  allowedIps: FormField,
  ipReportOnly: FormField,
})

export function readKeyForm(form: typeof KeyForm.static): KeyFormValues {
  return {
    name: form.name ?? '',
    description: form.description ?? '',
    origins: form.origins ?? '',
    scopes: listOf(form.scopes),
    expiresOn: (form.expiresOn ?? '').trim(),
    rateLimitLimit: (form.rateLimitLimit ?? '').trim(),
    rateLimitWindow: (form.rateLimitWindow ?? '').trim(),
    reportOnly: form.reportOnly === 'on',
    allowedIps: form.allowedIps ?? '',
    ipReportOnly: form.ipReportOnly === 'on',
  }
}

/** The values of a repeated field, in the order sent. */
export function listOf(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : typeof value === 'string' ? [value] : value
}

/** The two rate-limit fields: both empty is the service default (null). */
export function rateLimitOf(
  values: Pick<KeyFormValues, 'rateLimitLimit' | 'rateLimitWindow'>,
): { ok: true; value: { limit: number; windowSeconds: number } | null } | { ok: false; message: string } {
  const { rateLimitLimit: limit, rateLimitWindow: window } = values
  if (limit === '' && window === '') return { ok: true, value: null }
  if (!/^\d{1,7}$/.test(limit) || !/^\d{1,5}$/.test(window)) {
    return {
      ok: false,
      message: 'Enter whole numbers for both the requests and the seconds (like 300 per 60), or leave both empty for the service default.',
    }
  }
  return { ok: true, value: { limit: Number(limit), windowSeconds: Number(window) } }
}

/** `2027-01-31` -> the ISO instant 00:00 UTC that day; '' -> null (no expiry). */
export function expiresAtOf(expiresOn: string): { ok: true; value: string | null } | { ok: false; message: string } {
  if (expiresOn === '') return { ok: true, value: null }
  const at = /^\d{4}-\d{2}-\d{2}$/.test(expiresOn) ? new Date(`${expiresOn}T00:00:00.000Z`) : null
  if (!at || Number.isNaN(at.getTime()) || at.toISOString().slice(0, 10) !== expiresOn) {
    return { ok: false, message: `"${expiresOn}" is not a date; pick a day, written like 2027-01-31, or leave the field empty.` }
  }
  return { ok: true, value: at.toISOString() }
}

/**
 * The settings the form asks for, in the shape of src/keys/rules.ts, plus the problems
 * found before those rules run (a date that is not a date). A public key's form sets its
 * origins, a private key's its allowed IPs; neither touches the other type's fields.
 * `current` is the key being edited: its expiry is left alone while the date field still
 * shows the same day, so that an expiry set to the second through the admin API survives
 * an edit of the name.
 */
export function keySettingsOf(
  type: KeyType,
  values: KeyFormValues,
  current?: { expiresAt: string | null },
): { input: KeySettingsInput & { name: string; scopes: string[] }; problems: FieldProblem[] } {
  const input: KeySettingsInput & { name: string; scopes: string[] } = {
    name: values.name,
    description: values.description.trim() === '' ? null : values.description,
    scopes: values.scopes,
    ...(type === 'public'
      ? { allowedOrigins: entryLines(values.origins), originPolicy: values.reportOnly ? 'report' : 'enforce' }
      : { allowedIps: entryLines(values.allowedIps), ipPolicy: values.ipReportOnly ? 'report' : 'enforce' }),
  }
  const problems: FieldProblem[] = []
  const unchanged = current !== undefined && (current.expiresAt?.slice(0, 10) ?? '') === values.expiresOn
  if (!unchanged) {
    const expiry = expiresAtOf(values.expiresOn)
    if (expiry.ok) input.expiresAt = expiry.value
    else problems.push({ field: 'expiresAt', message: expiry.message })
  }
  const rateLimit = rateLimitOf(values)
  if (rateLimit.ok) input.rateLimit = rateLimit.value
  else problems.push({ field: 'rateLimit', message: rateLimit.message })
  return { input, problems }
}

/**
 * The rules' field problems, placed next to the form's fields. Origin and IP problems
 * already name the entry and say why (a range with host bits set names the range meant);
 * the others are rephrased for a form rather than a JSON body.
 */
export function formErrorsOf(type: KeyType, problems: readonly FieldProblem[], expiresOn: string): KeyFormErrors {
  const errors: KeyFormErrors = {}
  for (const { field, message } of problems) {
    if (field === 'name') errors.name = 'Enter a name of 1 to 100 characters.'
    else if (field === 'description') errors.description = 'The description can have at most 1000 characters.'
    else if (field === 'scopes') {
      errors.scopes =
        type === 'public'
          ? `Choose at least one scope; a public key can hold ${PUBLIC_KEY_SCOPES.join(', ')}.`
          : 'Choose at least one scope.'
    } else if (field === 'allowedOrigins') {
      ;(errors.origins ??= []).push('Enter at least one allowed origin, e.g. example.com or localhost:3000.')
    } else if (field.startsWith('allowedOrigins[')) (errors.origins ??= []).push(message)
    else if (field.startsWith('allowedIps[')) (errors.allowedIps ??= []).push(message)
    else if (field === 'expiresAt') {
      errors.expiresOn = message.startsWith('expiresAt')
        ? `${expiresOn} has already begun (in UTC); choose a later day, or leave the field empty for a key that does not expire.`
        : message
    } else if (field.startsWith('rateLimit')) errors.rateLimit = message
  }
  return errors
}

/** A form body whose bytes are not UTF-8, or whose escapes do not decode to it: refused, never repaired. */
export class UnreadableForm extends Error {}

const FORM = 'application/x-www-form-urlencoded'

/**
 * The dashboard's form parser, in place of Elysia's: a browser sends forms as UTF-8, so
 * bytes or `%` escapes that are not UTF-8 are refused (a 400 page that changed nothing)
 * rather than stored as U+FFFD or as the escape's raw text. A name sent twice becomes a
 * list, as checkboxes need. Every body is read within the 1 MiB limit (a larger one is a 413,
 * unread); one of another content type is read as no field at all (no page takes one), so
 * the route's own checks refuse it and nothing changes.
 */
export async function readForm({ request, contentType }: { request: Request; contentType: string }) {
  const bytes = await readBodyBytes(request)
  if (contentType !== FORM) return {}
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new UnreadableForm('the form is not UTF-8 text')
  }
  const form: Record<string, string | string[]> = {}
  for (const pair of text.split('&')) {
    if (pair === '') continue
    const at = pair.indexOf('=')
    const name = decodeField(at < 0 ? pair : pair.slice(0, at))
    const value = decodeField(at < 0 ? '' : pair.slice(at + 1))
    const seen = form[name]
    form[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return form
}

function decodeField(encoded: string): string {
  try {
    return decodeURIComponent(encoded.replaceAll('+', ' '))
  } catch {
    throw new UnreadableForm('a form field does not decode to UTF-8 text')
  }
}
