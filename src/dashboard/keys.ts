import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { parseIpEntry } from '../access/allowed-ips.ts'
import type { KeyType } from '../access/key-format.ts'
import { compileOriginMatcher, parseAllowedOrigin } from '../access/origin/index.ts'
import { isScope } from '../access/scopes.ts'
import { byMember } from '../audit/trail.ts'
import { listChanges } from '../audit/trail.ts'
import type { Budget } from '../config.ts'
import { ApiError } from '../errors.ts'
import { publicOrigin } from '../http/public-origin.ts'
import { checkKeySettings, type KeySettingsInput } from '../keys/rules.ts'
import { toKeyRecord, type ApiKeyRow, type KeyRecord, type KeyService } from '../keys/service.ts'
import { usageReport } from '../usage/report.ts'
import { keyTrailPanel } from './audit-views.ts'
import { renderFailures } from './failures.ts'
import { formatDateTime, relativeTime } from './format.ts'
import { FormField, formErrorsOf, KeyForm, keySettingsOf, readKeyForm, TokenOnlyForm } from './forms.ts'
import { html, type Html } from './html.ts'
import { htmlPage, redirect } from './http.ts'
import { formValuesOf, keyFormPage, type KeyFormValues } from './key-views/form.ts'
import { keyPage } from './key-views/key.ts'
import { keyListPage } from './key-views/list.ts'
import { canRoll, KEY_FILTERS, keyPath, keyState, type KeyFilter } from './key-views/parts.ts'
import { revokePage } from './key-views/revoke.ts'
import { ROLL_GRACES, rollPage } from './key-views/roll.ts'
import { newSecretPage } from './key-views/secret.ts'
import { ownersOnly, type memberMacro } from './member.ts'
import { narrowestEntry } from './narrowest.ts'
import { KeyParams, keyNotFound, MISSING_KEY, type OwnKeys } from './own-keys.ts'
import type { SignedIn } from './sessions.ts'
import {
  browserUsePanel,
  refusedIpsPanel,
  refusedOriginsPanel,
  scopesPanel,
  usagePanel,
  usageWindow,
  type UsageRange,
} from './usage-views.ts'
import { KEYS_PATH, messagePage } from './views.ts'

/** Entries of the trail on a key's page. */
const KEY_TRAIL = 5
const NEW_KEY_DEFAULTS: KeyFormValues = {
  name: '',
  description: '',
  origins: '',
  scopes: ['ANALYTICS_WRITE'],
  expiresOn: '',
  rateLimitLimit: '',
  rateLimitWindow: '',
  reportOnly: false,
  allowedIps: '',
  ipReportOnly: false,
}

/** A new private key's form starts with a server's usual scope and no address restriction. */
const NEW_PRIVATE_KEY_DEFAULTS: KeyFormValues = { ...NEW_KEY_DEFAULTS, scopes: ['ANALYTICS_WRITE'], origins: '' }

const KEYS = '/settings/developers/api-keys'

/** The key page's flags and choices; anything else in them shows the page as plain. */
const KeyPageQuery = t.Object({
  origin: FormField,
  range: FormField,
  allowed: FormField,
  removed: FormField,
  created: FormField,
  saved: FormField,
  rolled: FormField,
})

/**
 * Settings > Developers > API keys: the list, creating, showing (usage chart, refused
 * origins, refused addresses, unused scopes, trail), editing, rolling and revoking public keys,
 * the one-click "allow" and "remove a scope", and the JSON helpers of the pages' script.
 * Private keys are shown, edited (allowed IPs included) and revoked here; operators create
 * and roll them (docs/dashboard.md, "The pages"), so their plaintext is never shown.
 */
export function keysPlugin(deps: KeysDeps) {
  return new Elysia({ name: 'dashboard/keys' })
    .use(keyListRoutes(deps))
    .use(keyPageRoute(deps))
    .use(keyEditRoutes(deps))
    .use(keyRetireRoutes(deps))
    .use(keyScriptHelpers(deps))
}

interface KeysDeps {
  db: Db
  keys: KeyService
  ownKeys: OwnKeys
  member: ReturnType<typeof memberMacro>
  /** RATE_LIMIT_PUBLIC and RATE_LIMIT_PRIVATE, shown on the key form of each type. */
  defaultRateLimits: Record<KeyType, Budget>
}

/** The list of the business's keys, and creating a key: public for every member, private for owners. */
function keyListRoutes(deps: KeysDeps) {
  const { keys, defaultRateLimits } = deps

  /** A creation form sent: the key made (`created` answers), or the form again with what to fix. */
  async function createFromForm(
    member: SignedIn,
    body: typeof KeyForm.static,
    type: KeyType,
    created: (made: Awaited<ReturnType<KeyService['create']>>) => Response,
  ): Promise<Response> {
    const now = new Date()
    const values = readKeyForm(body)
    const { input, problems } = keySettingsOf(type, values)
    const checked = checkKeySettings(type, input, now)
    const all = [...problems, ...(checked.ok ? [] : checked.problems)]
    if (all.length > 0) {
      return htmlPage(
        400,
        keyFormPage(member, { kind: 'create', type }, values, formErrorsOf(type, all, values.expiresOn), now, defaultRateLimits),
      )
    }
    return created(await keys.create(member.businessId, { ...input, type, createdBy: member.email }, byMember(member.email), now))
  }

  return (
    new Elysia({ name: 'dashboard/keys/list' })
      .use(deps.member)
      .onError(renderFailures(MISSING_KEY))
      .get(
        KEYS,
        async ({ member, query }) => {
          const flash =
            query.revoked !== undefined
              ? html`<div class="alert success" role="status">The key was revoked: requests made with it are now refused.</div>`
              : undefined
          const filter: KeyFilter = KEY_FILTERS.find((f) => f === query.show) ?? 'all'
          return htmlPage(200, keyListPage(member, await keys.list(member.businessId), new Date(), flash, filter))
        },
        { member: 'page', query: t.Object({ revoked: FormField, show: FormField }) },
      )
      .get(
        `${KEYS}/new`,
        ({ member }) =>
          htmlPage(200, keyFormPage(member, { kind: 'create', type: 'public' }, NEW_KEY_DEFAULTS, {}, new Date(), defaultRateLimits)),
        { member: 'page' },
      )
      // Posted to the form's own address, so that a refused form comes back where it was.
      .post(
        `${KEYS}/new`,
        ({ member, body }) => createFromForm(member, body, 'public', (created) => redirect(`${keyPath(created.record.id)}?created=1`)),
        { member: 'form', parse: 'urlencoded', body: KeyForm },
      )
      .get(
        `${KEYS}/new-private`,
        ({ member }) =>
          member.role === 'owner'
            ? htmlPage(
                200,
                keyFormPage(member, { kind: 'create', type: 'private' }, NEW_PRIVATE_KEY_DEFAULTS, {}, new Date(), defaultRateLimits),
              )
            : ownersOnly(member, 'create private keys'),
        { member: 'page' },
      )
      // The same rules as the admin API's; the answer is the one page that ever shows the key.
      .post(
        `${KEYS}/new-private`,
        ({ member, body }) =>
          createFromForm(member, body, 'private', (created) => htmlPage(200, newSecretPage(member, created.record, created.key, null))),
        { member: { ownersTo: 'create private keys' }, parse: 'urlencoded', body: KeyForm },
      )
  )
}

/** A key's page: its settings, usage chart, refused origins or addresses, unused scopes and trail. */
function keyPageRoute(deps: KeysDeps) {
  const { db, keys, ownKeys } = deps
  return new Elysia({ name: 'dashboard/keys/page' })
    .use(deps.member)
    .onError(renderFailures(MISSING_KEY))
    .get(
      `${KEYS}/:id`,
      async ({ member, params, query, request }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        const origin = query.origin?.trim() ?? ''
        const key = toKeyRecord(row)
        const now = new Date()
        const [replacement, predecessor] = await Promise.all([
          ownKeys.record(member, key.replacedBy),
          ownKeys.record(member, key.rolledFrom),
        ])
        const range: UsageRange = query.range === '7d' ? '7d' : '24h'
        const [report, trail, all] = await Promise.all([
          usageReport(db, row, usageWindow(range, now.getTime())),
          listChanges(db, { businessId: member.businessId, keyId: row.id, after: null, limit: KEY_TRAIL + 1 }),
          keys.list(member.businessId),
        ])
        const byId = new Map(all.map((k) => [k.id, k]))
        // Said only when true, so that a crafted link cannot make the page claim a change.
        const allowed = (key.type === 'public' ? key.allowedOrigins : key.allowedIps).find((e) => e === query.allowed)
        const removed = query.removed !== undefined && isScope(query.removed) && !key.scopes.includes(query.removed) ? query.removed : null
        return htmlPage(
          200,
          keyPage(member, key, {
            now,
            publicKey: row.publicKey,
            serviceOrigin: publicOrigin(request),
            created: query.created !== undefined,
            replacement,
            predecessor,
            more: html`${browserUsePanel(key, report, now, range)}${usagePanel(key, report, range)}${key.type === 'public' ? refusedOriginsPanel(member, key, report, now, range) : refusedIpsPanel(member, key, report, now, range)}${key.revokedAt ? null : scopesPanel(member, key, report, now)}${keyTrailPanel(key, trail.slice(0, KEY_TRAIL), byId, now, trail.length > KEY_TRAIL)}`,
            flash: allowed
              ? html`<div class="alert success" role="status">Added <code>${allowed}</code> to the allowed ${key.type === 'public' ? 'origins' : 'IPs'}. It applies from the key's next request.</div>`
              : removed
                ? html`<div class="alert success" role="status">Removed <code>${removed}</code> from the key's scopes. It applies from the key's next request.</div>`
                : query.saved !== undefined
                  ? html`<div class="alert success" role="status">Changes saved. They apply from the key's next request.</div>`
                  : query.rolled !== undefined && predecessor
                    ? rolledFlash(predecessor, now)
                    : undefined,
            test:
              query.origin === undefined ? undefined : { origin, match: compileOriginMatcher(row.allowedOrigins).match(origin || null) },
          }),
        )
      },
      { member: 'page', params: KeyParams, query: KeyPageQuery },
    )
}

/** Editing a key: the form, and the one-click "allow" and "remove a scope" of its page. */
function keyEditRoutes(deps: KeysDeps) {
  const { keys, ownKeys, defaultRateLimits } = deps

  /**
   * A one-field change from a button (allow an origin or an address, remove a scope),
   * through the same key service as the edit form: validated by the same rules and
   * recorded in the trail. Null when it was made; else the page that says why not.
   */
  async function changeKey(member: SignedIn, row: ApiKeyRow, input: KeySettingsInput): Promise<Response | null> {
    try {
      await keys.update(member.businessId, row.id, input, byMember(member.email))
      return null
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      if (error.code === 'conflict') return cannotEdit(member, { ...row, revokedAt: new Date() })
      if (error.code === 'invalid_request') {
        return htmlPage(400, messagePage({ title: 'Key not changed', who: member, message: `Nothing was changed: ${error.message}` }))
      }
      throw error
    }
  }

  /** The member's key if it may be changed here (not revoked); else the page saying why not. */
  async function editableKey(member: SignedIn, id: string): Promise<ApiKeyRow | Response> {
    const row = await ownKeys.find(member, id)
    if (!row) return keyNotFound(member)
    return cannotEdit(member, row) ?? row
  }

  /**
   * A one-click "Allow" of a refused origin or address: adds the entry to the key's list,
   * then back to the panel, whose flash names the entry. `parsed` is the entry as its
   * parser read what was posted; refused, the page says why and nothing changes.
   */
  async function allowEntry(
    member: SignedIn,
    id: string,
    list: 'allowedOrigins' | 'allowedIps',
    parsed: { ok: true; entry: string } | { ok: false; reason: string },
    page: { refusal: string; panel: string },
  ): Promise<Response> {
    const row = await editableKey(member, id)
    if (row instanceof Response) return row
    if (!parsed.ok) {
      return htmlPage(400, messagePage({ title: page.refusal, who: member, message: `Nothing was changed: ${parsed.reason}` }))
    }
    const back = `${keyPath(row.id)}?allowed=${encodeURIComponent(parsed.entry)}#${page.panel}`
    // Already there (a second click, or another member was faster): nothing to change.
    if (row[list].includes(parsed.entry)) return redirect(back)
    const entries = [...row[list], parsed.entry]
    return (
      (await changeKey(member, row, list === 'allowedOrigins' ? { allowedOrigins: entries } : { allowedIps: entries })) ?? redirect(back)
    )
  }

  return new Elysia({ name: 'dashboard/keys/edit' })
    .use(deps.member)
    .onError(renderFailures(MISSING_KEY))
    .get(
      `${KEYS}/:id/edit`,
      async ({ member, params }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        const key = toKeyRecord(row)
        return (
          cannotEdit(member, row) ??
          htmlPage(200, keyFormPage(member, { kind: 'edit', key }, formValuesOf(key), {}, new Date(), defaultRateLimits))
        )
      },
      { member: 'page', params: KeyParams },
    )
    .post(
      `${KEYS}/:id/edit`,
      async ({ member, params, body }) => {
        const row = await editableKey(member, params.id)
        if (row instanceof Response) return row
        const now = new Date()
        const key = toKeyRecord(row)
        const values = readKeyForm(body)
        const { input, problems } = keySettingsOf(row.type, values, key)
        const checked = checkKeySettings(row.type, input, now)
        const all = [...problems, ...(checked.ok ? [] : checked.problems)]
        if (all.length > 0) {
          return htmlPage(
            400,
            keyFormPage(member, { kind: 'edit', key }, values, formErrorsOf(row.type, all, values.expiresOn), now, defaultRateLimits),
          )
        }
        try {
          await keys.update(member.businessId, row.id, input, byMember(member.email), now)
        } catch (error) {
          if (error instanceof ApiError && error.code === 'conflict') return cannotEdit(member, { ...row, revokedAt: now })!
          throw error
        }
        return redirect(`${keyPath(row.id)}?saved=1`)
      },
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: KeyForm },
    )
    .post(
      `${KEYS}/:id/allow-origin`,
      ({ member, params, body }) =>
        allowEntry(member, params.id, 'allowedOrigins', narrowestEntry(body.origin ?? ''), {
          refusal: 'Origin not added',
          panel: 'refused-origins',
        }),
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: t.Object({ csrf: FormField, origin: FormField }) },
    )
    .post(
      `${KEYS}/:id/allow-ip`,
      // The button names the entry; it is parsed again, as anything may be posted here. A
      // public key has no allowed IPs: the key rules refuse the change, and the page says so.
      ({ member, params, body }) =>
        allowEntry(member, params.id, 'allowedIps', parseIpEntry(body.entry ?? ''), {
          refusal: 'Address not added',
          panel: 'refused-ips',
        }),
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: t.Object({ csrf: FormField, entry: FormField }) },
    )
    .post(
      `${KEYS}/:id/remove-scope`,
      async ({ member, params, body }) => {
        const row = await editableKey(member, params.id)
        if (row instanceof Response) return row
        const scope = body.scope ?? ''
        const back = `${keyPath(row.id)}?removed=${encodeURIComponent(scope)}#scopes`
        // Already gone (a second click): nothing to change.
        if (!(row.scopes as string[]).includes(scope)) return redirect(back)
        const scopes = row.scopes.filter((s) => s !== scope)
        if (scopes.length === 0) {
          return htmlPage(
            400,
            messagePage({
              title: 'Scope not removed',
              who: member,
              message: `Nothing was changed: ${scope} is the key's only scope, and a key needs at least one. Revoke the key if it is not needed.`,
            }),
          )
        }
        return (await changeKey(member, row, { scopes })) ?? redirect(back)
      },
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: t.Object({ csrf: FormField, scope: FormField }) },
    )
}

/** Revoking a key, and rolling a public key into a new one. */
function keyRetireRoutes(deps: KeysDeps) {
  const { keys, ownKeys } = deps
  return new Elysia({ name: 'dashboard/keys/retire' })
    .use(deps.member)
    .onError(renderFailures(MISSING_KEY))
    .get(
      `${KEYS}/:id/revoke`,
      async ({ member, params }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        if (row.revokedAt) return redirect(keyPath(row.id))
        return htmlPage(200, revokePage(member, toKeyRecord(row)))
      },
      { member: 'page', params: KeyParams },
    )
    .post(
      `${KEYS}/:id/revoke`,
      async ({ member, params }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        await keys.revoke(member.businessId, row.id, byMember(member.email))
        return redirect(`${KEYS_PATH}?revoked=1`)
      },
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: TokenOnlyForm },
    )
    .get(
      `${KEYS}/:id/roll`,
      async ({ member, params }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        return cannotRoll(member, toKeyRecord(row)) ?? htmlPage(200, rollPage(member, toKeyRecord(row)))
      },
      { member: 'page', params: KeyParams },
    )
    .post(
      `${KEYS}/:id/roll`,
      async ({ member, params, body }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        const key = toKeyRecord(row)
        const blocked = cannotRoll(member, key)
        if (blocked) return blocked
        const grace = ROLL_GRACES.find((g) => String(g.seconds) === body.graceSeconds)
        if (!grace) {
          return htmlPage(400, rollPage(member, key, 'Choose how long the old key may keep working: now, 1 hour, 24 hours or 7 days.'))
        }
        try {
          const rolled = await keys.roll(member.businessId, row.id, grace.seconds, byMember(member.email))
          return redirect(`${keyPath(rolled.record.id)}?rolled=1`)
        } catch (error) {
          // Rolled (or revoked) meanwhile by someone else: the page now says so.
          if (error instanceof ApiError && error.code === 'conflict') return redirect(keyPath(row.id))
          throw error
        }
      },
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: t.Object({ csrf: FormField, graceSeconds: FormField }) },
    )
    .post(
      `${KEYS}/:id/leak/roll`,
      async ({ member, params }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        try {
          const rolled = await keys.rollLeaked(member.businessId, row.id, byMember(member.email))
          // The banner is gone now: the page is drawn for the member as they are after the roll.
          const after = { ...member, leakNotices: member.leakNotices.filter((notice) => notice.keyId !== row.id) }
          return htmlPage(200, newSecretPage(after, rolled.record, rolled.key, rolled.replaced))
        } catch (error) {
          // Rolled meanwhile by another owner, or never leaked: the key's page says where it stands.
          if (error instanceof ApiError && error.code === 'conflict') return redirect(keyPath(row.id))
          throw error
        }
      },
      { member: { ownersTo: 'roll a leaked private key' }, parse: 'urlencoded', params: KeyParams, body: TokenOnlyForm },
    )
    .post(
      `${KEYS}/:id/leak/dismiss`,
      async ({ member, params, request }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        await keys.dismissLeak(member.businessId, row.id)
        return redirect(sameSiteReferrer(request) ?? keyPath(row.id))
      },
      { member: 'form', parse: 'urlencoded', params: KeyParams, body: TokenOnlyForm },
    )
}

/** The dashboard page a form was sent from, to go back to; null for anything else. */
function sameSiteReferrer(request: Request): string | null {
  const referrer = request.headers.get('referer')
  if (referrer === null) return null
  try {
    const from = new URL(referrer)
    const here = new URL(request.url)
    return from.origin === here.origin && from.pathname.startsWith('/dashboard') ? from.pathname + from.search : null
  } catch {
    return null
  }
}

/** Helpers of the pages' script: JSON, errors in the API's envelope. */
function keyScriptHelpers(deps: KeysDeps) {
  const { db, ownKeys } = deps
  return new Elysia({ name: 'dashboard/keys/script' })
    .use(deps.member)
    .onError(renderFailures(MISSING_KEY))
    .get(
      `${KEYS}/:id/origin-test`,
      async ({ member, params, query }) => {
        const row = await ownKeys.require(member, params.id)
        const origin = (query.origin ?? '').trim()
        const match = compileOriginMatcher(row.allowedOrigins).match(origin || null)
        return noStore({ origin, ...match, keyState: keyState(toKeyRecord(row), new Date()) })
      },
      { member: 'json', params: KeyParams, query: t.Object({ origin: FormField }) },
    )
    .get(
      `${KEYS}/:id/first-request`,
      async ({ member, params }) => {
        const row = await ownKeys.require(member, params.id)
        const receivedAt = row.lastUsedAt?.toISOString() ?? null
        // Until one is accepted, the latest refused origin says why the site's requests fail.
        const refused = receivedAt
          ? null
          : ((await usageReport(db, row, usageWindow('24h', Date.now()))).refusedOrigins
              .filter((o) => !o.reported)
              .sort((a, b) => b.lastSeenAt.localeCompare(a.lastSeenAt))[0] ?? null)
        return noStore({ receivedAt, refused: refused && { origin: refused.origin, lastSeenAt: refused.lastSeenAt } })
      },
      { member: 'json', params: KeyParams },
    )
    .get(
      '/api/check-origins',
      ({ query }) =>
        noStore({
          results: (query.entry ?? []).slice(0, 100).map((value) => {
            const parsed = parseAllowedOrigin(value)
            return parsed.ok ? { value, ok: true, entry: parsed.entry } : { value, ok: false, reason: parsed.reason }
          }),
        }),
      { member: 'json', query: t.Object({ entry: t.Optional(t.Array(t.String({ maxLength: 1000 }), { maxItems: 1000 })) }) },
    )
}

/** JSON for the pages' script; it may show a key's settings, so it is never cached. */
function noStore<T>(body: T): Response {
  return Response.json(body, { headers: { 'cache-control': 'no-store' } })
}

function cannotEdit(member: SignedIn, key: ApiKeyRow): Response | null {
  if (!key.revokedAt) return null
  return htmlPage(
    409,
    messagePage({ title: 'Key revoked', who: member, message: 'A revoked key cannot be changed; create a new key instead.' }),
  )
}

function cannotRoll(member: SignedIn, key: KeyRecord): Response | null {
  if (canRoll(key, new Date())) return null
  const why =
    key.type === 'private'
      ? 'Private keys are rolled by operators through the admin API or the CLI (keys roll ID --grace 1h).'
      : key.revokedAt
        ? 'A revoked key cannot be rolled; create a new key instead.'
        : key.replacedBy
          ? 'This key was already rolled; roll the key that replaced it instead.'
          : 'An expired key cannot be rolled; create a new key instead.'
  return htmlPage(409, messagePage({ title: 'Key cannot be rolled', who: member, message: why }))
}

function rolledFlash(old: KeyRecord, now: Date): Html {
  const ends = old.expiresAt ? new Date(old.expiresAt) : null
  const until =
    ends && ends.getTime() > now.getTime()
      ? `The old key ${old.keyHint} keeps working until ${formatDateTime(ends)} (${relativeTime(ends, now)}).`
      : `The old key ${old.keyHint} no longer works.`
  return html`<div class="alert success" role="status">This is the new key. Put its snippet on your pages in place of the old one. ${until}</div>`
}
