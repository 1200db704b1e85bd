import { html, type Html } from './html.ts'
import { PASSWORD_MIN_LENGTH } from '../members/service.ts'
import type { SignedIn } from './sessions.ts'
import { disabledEndpointsBanner, leakBanner } from './banners.ts'

export const KEYS_PATH = '/dashboard/settings/developers/api-keys'

export const WEBHOOKS_PATH = '/dashboard/settings/developers/webhooks'

/** A webhook endpoint's page, or one of its actions (`test`, `enable`, `deliveries/:id/resend`). */
export function endpointPath(id: string, action = ''): string {
  return `${WEBHOOKS_PATH}/${id}${action ? `/${action}` : ''}`
}

/** A key's page, or one of its actions (`edit`, `roll`, `leak/dismiss`). */
export function keyPath(id: string, action = ''): string {
  return `${KEYS_PATH}/${id}${action ? `/${action}` : ''}`
}
export const EVENTS_PATH = '/dashboard/events'
export const MEMBERS_PATH = '/dashboard/settings/members'
export const AUDIT_PATH = '/dashboard/settings/audit'
export const BUSINESS_PATH = '/dashboard/settings/business'
export const SIGN_IN_PATH = '/dashboard/sign-in'
export const SWITCH_PATH = '/dashboard/switch'
export const ASSET_VERSION = '8'

/** The pages of a business that every business has: where switching business lands. */
export const SECTION_PATHS = [EVENTS_PATH, KEYS_PATH, MEMBERS_PATH, AUDIT_PATH, BUSINESS_PATH] as const

export interface Crumb {
  label: string
  href?: string
}

const KEY_CRUMBS: Crumb[] = [{ label: 'Settings' }, { label: 'Developers' }, { label: 'API keys', href: KEYS_PATH }]

/** The Settings > Developers > API keys trail, then the page's own crumbs. */
export function keyCrumbs(...more: Crumb[]): Crumb[] {
  return [...KEY_CRUMBS, ...more]
}

export function layout(page: { title: string; who?: SignedIn; crumbs?: Crumb[]; content: Html }): Html {
  const { who } = page
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title} · keygate</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/assets/dashboard.css?v=${ASSET_VERSION}">
<script src="/dashboard/assets/dashboard.js?v=${ASSET_VERSION}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="topbar">
  <a class="brand" href="/dashboard">keygate</a>
  ${
    who
      ? html`<button type="button" class="button small menu-button" aria-controls="sidenav" aria-expanded="false" hidden>Menu</button>
  <div class="account">
    ${switcher(who, sectionOf(page.crumbs))}
    <span class="who">${who.email} · ${who.role}</span>
    <form method="post" action="/dashboard/sign-out">
      ${sessionTokenField(who)}
      <button type="submit" class="button small">Sign out</button>
    </form>
  </div>`
      : null
  }
</header>
<div class="${who ? 'shell' : 'shell single'}">
  ${
    who
      ? html`<nav class="sidenav" id="sidenav" aria-label="Dashboard">
    <p class="nav-group">${who.businessName}</p>
    <ul>
      <li><a href="${EVENTS_PATH}"${navCurrent(page.crumbs, EVENTS_PATH)}>Events</a></li>
    </ul>
    <p class="nav-heading">Settings</p>
    <p class="nav-group">Developers</p>
    <ul>
      <li><a href="${KEYS_PATH}"${navCurrent(page.crumbs, KEYS_PATH)}>API keys</a></li>
      <li><a href="${WEBHOOKS_PATH}"${navCurrent(page.crumbs, WEBHOOKS_PATH)}>Webhooks</a></li>
      <li><a href="/docs">API reference</a></li>
    </ul>
    <p class="nav-group">Business</p>
    <ul>
      <li><a href="${MEMBERS_PATH}"${navCurrent(page.crumbs, MEMBERS_PATH)}>Members</a></li>
      <li><a href="${AUDIT_PATH}"${navCurrent(page.crumbs, AUDIT_PATH)}>Audit trail</a></li>
      <li><a href="${BUSINESS_PATH}"${navCurrent(page.crumbs, BUSINESS_PATH)}>Identity secret</a></li>
    </ul>
  </nav>`
      : null
  }
  <main id="main" tabindex="-1">
    ${page.crumbs ? breadcrumb(page.crumbs) : null}
    ${who ? disabledEndpointsBanner(who.disabledEndpoints, endpointPath) : null}
    ${who ? leakBanner(who.leakNotices, { owner: who.role === 'owner', keyPath, formFields: csrfField(who) }) : null}
    ${page.content}
  </main>
</div>
</body>
</html>
`
}

/** The section a page belongs to (its first crumb with an address), where a switch of business lands. */
function sectionOf(crumbs: Crumb[] | undefined): string {
  const href = crumbs?.find((c) => c.href !== undefined)?.href
  return SECTION_PATHS.find((p) => p === href) ?? KEYS_PATH
}

/**
 * The business shown, and for an account in several, the others to switch to: a form per
 * business (a switch changes the session, so it is a POST with the CSRF token), inside a
 * disclosure that works without the script. It lands on the same section of the other business.
 */
function switcher(who: SignedIn, section: string): Html {
  const others = who.memberships.filter((m) => m.memberId !== who.memberId)
  if (others.length === 0) return html`<span class="business">${who.businessName}</span>`
  return html`<details class="switcher">
      <summary><span class="visually-hidden">Business: </span><span class="business">${who.businessName}</span> <span class="switch-label">Switch</span></summary>
      <div class="switcher-menu">
        <p class="small muted">Switch to</p>
        <ul>${others.map(
          (m) => html`<li><form method="post" action="${SWITCH_PATH}">
          ${sessionTokenField(who)}
          <input type="hidden" name="member" value="${m.memberId}">
          <input type="hidden" name="next" value="${section}">
          <button type="submit" class="switch-to">${m.businessName} <span class="muted small">${m.role}</span></button>
        </form></li>`,
        )}</ul>
      </div>
    </details>`
}

/** The side navigation marks the section a page belongs to: `page` on the section itself, `true` below it. */
function navCurrent(crumbs: Crumb[] | undefined, href: string): Html | null {
  if (!crumbs?.some((c) => c.href === href)) return null
  return crumbs.at(-1)?.href === href ? html` aria-current="page"` : html` aria-current="true"`
}

function breadcrumb(crumbs: Crumb[]): Html {
  return html`<nav class="breadcrumb" aria-label="Breadcrumb"><ol>${crumbs.map(
    (c, i) =>
      html`<li>${c.href && i < crumbs.length - 1 ? html`<a href="${c.href}">${c.label}</a>` : html`<span${i === crumbs.length - 1 ? html` aria-current="page"` : null}>${c.label}</span>`}</li>`,
  )}</ol></nav>`
}

/**
 * Every form of a signed-in page: the session's CSRF token, and the business the page
 * shows, so that a form sent after switching business in another tab changes nothing
 * (src/dashboard/member.ts).
 */
export function csrfField(who: SignedIn): Html {
  return html`${sessionTokenField(who)}<input type="hidden" name="business" value="${who.businessId}">`
}

/** The CSRF token alone: signing out and switching business do the same whatever business a tab showed. */
function sessionTokenField(who: SignedIn): Html {
  return html`<input type="hidden" name="csrf" value="${who.csrfToken}">`
}

export function signInPage(state: { csrf: string; email?: string; next?: string; error?: string }): Html {
  return layout({
    title: 'Sign in',
    content: html`<div class="narrow">
  <h1>Sign in</h1>
  <p class="lead">Manage your business's API keys.</p>
  ${state.error ? html`<div class="alert error" role="alert" id="sign-in-error">${state.error}</div>` : null}
  <form method="post" action="/dashboard/sign-in" class="stack">
    <input type="hidden" name="csrf" value="${state.csrf}">
    ${state.next ? html`<input type="hidden" name="next" value="${state.next}">` : null}
    <div class="field">
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required value="${state.email ?? ''}"
        ${state.error ? html`aria-describedby="sign-in-error"` : null} ${state.email ? null : html`autofocus`}>
    </div>
    <div class="field">
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required
        ${state.email ? html`autofocus` : null}>
    </div>
    <button type="submit" class="button primary">Sign in</button>
  </form>
  <p class="hint">First start? The service printed a one-time sign-in link in its output (the line starting
  with <q>keygate first start</q>). Operators add members and issue new links through the admin API.</p>
</div>`,
  })
}

/** What the page says when the two passwords differ: the script's check and the server's alike. */
export const PASSWORDS_DIFFER = 'The two passwords differ; type the same password again.'

/**
 * The one-time link's page. When the two passwords differed, the server sends the first
 * back (kept, on a page nobody caches) and asks only for the second again; the script
 * catches a difference before anything is sent.
 */
export function choosePasswordPage(state: {
  token: string
  email: string
  businessName: string
  error?: string
  /** The first password as typed, kept when only the repetition was wrong. */
  password?: string
}): Html {
  const mismatch = state.error === PASSWORDS_DIFFER
  const pageError = mismatch ? undefined : state.error
  return layout({
    title: 'Choose a password',
    content: html`<div class="narrow">
  <h1>Choose a password</h1>
  <p class="lead">You are signing in as <strong>${state.email}</strong> to <strong>${state.businessName}</strong>.
  This link works once; afterwards sign in with your email and this password.</p>
  ${pageError ? html`<div class="alert error" role="alert" id="password-error">${pageError}</div>` : null}
  <form method="post" action="/dashboard/sign-in/link" class="stack" data-password-pair>
    <input type="hidden" name="token" value="${state.token}">
    <input type="text" name="email" value="${state.email}" autocomplete="username" hidden>
    <div class="field${pageError ? ' has-error' : ''}">
      <label for="password">New password</label>
      <p class="hint" id="password-hint">At least ${PASSWORD_MIN_LENGTH} characters.</p>
      <input id="password" name="password" type="password" autocomplete="new-password" required
        minlength="${PASSWORD_MIN_LENGTH}" aria-describedby="password-hint${pageError ? ' password-error' : ''}"${mismatch ? html` value="${state.password ?? ''}"` : html` autofocus`}${pageError ? html` aria-invalid="true"` : null}>
    </div>
    <div class="field${mismatch ? ' has-error' : ''}">
      <label for="confirm">Repeat the password</label>
      <p class="field-error" id="confirm-error"${mismatch ? html` role="alert"` : null}>${mismatch ? PASSWORDS_DIFFER : null}</p>
      <input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}"
        aria-describedby="confirm-error"${mismatch ? html` aria-invalid="true" autofocus` : null}>
    </div>
    <button type="submit" class="button primary">Save password and sign in</button>
  </form>
</div>`,
  })
}

/**
 * A member's link to an account that has a password: the person joins the link's business
 * by typing the password they have; the link cannot set one (docs/dashboard.md).
 */
export function joinWithPasswordPage(state: { token: string; email: string; businessName: string; error?: string }): Html {
  return layout({
    title: `Join ${state.businessName}`,
    content: html`<div class="narrow">
  <h1>Join ${state.businessName}</h1>
  <p class="lead">You were added to <strong>${state.businessName}</strong> as <strong>${state.email}</strong>, which already has a
  keygate account. Type its password to join; until you do, ${state.businessName} sees nothing of your account and you nothing of it.
  This link works once. Not yours, or you do not know the password? Close this page: nothing changes.</p>
  ${state.error ? html`<div class="alert error" role="alert" id="password-error">${state.error}</div>` : null}
  <form method="post" action="/dashboard/sign-in/link" class="stack">
    <input type="hidden" name="token" value="${state.token}">
    <input type="text" name="email" value="${state.email}" autocomplete="username" hidden>
    <div class="field${state.error ? ' has-error' : ''}">
      <label for="password">Your password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required autofocus${state.error ? html` aria-invalid="true" aria-describedby="password-error"` : null}>
    </div>
    <button type="submit" class="button primary">Join and sign in</button>
  </form>
</div>`,
  })
}

export function messagePage(page: { title: string; who?: SignedIn; message: Html | string; crumbs?: Crumb[] }): Html {
  return layout({
    title: page.title,
    who: page.who,
    crumbs: page.crumbs,
    content: html`<h1>${page.title}</h1>
<p>${page.message}</p>
<p><a href="${page.who ? KEYS_PATH : '/dashboard/sign-in'}">${page.who ? 'Back to API keys' : 'Go to sign-in'}</a></p>`,
  })
}
