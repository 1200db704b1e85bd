import type { Html } from './html.ts'
import { isHttps, requestHost } from '../http/public-origin.ts'

export const SESSION_COOKIE = 'keygate_session'
/** Double-submit token of the sign-in form, before any session exists (login CSRF). */
export const SIGN_IN_CSRF_COOKIE = 'keygate_sign_in'
export const COOKIE_PATH = '/dashboard'

export function readCookie(request: Request, name: string): string | null {
  const header = request.headers.get('cookie')
  if (!header) return null
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=')
    if (eq !== -1 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim() || null
  }
  return null
}

/**
 * HttpOnly (page scripts never need it), SameSite=Lax (sent on top-level navigation to the
 * dashboard, not on cross-site subrequests or POSTs), Path=/dashboard (never sent to the
 * API), and Secure when the page itself came over https.
 */
export function setCookie(request: Request, name: string, value: string, maxAgeSeconds: number): string {
  const secure = isHttps(request) ? '; Secure' : ''
  return `${name}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure}`
}

export function clearCookie(request: Request, name: string): string {
  return setCookie(request, name, '', 0)
}

/**
 * Why a state-changing request does not look like it came from one of our own pages, or
 * null. Browsers send `Origin` on every POST; older ones send at least `Sec-Fetch-Site`.
 * A request with neither (curl, say) is judged by the CSRF token alone.
 */
export function crossSiteReason(request: Request): string | null {
  const origin = request.headers.get('origin')
  if (origin !== null) {
    let host: string | null = null
    try {
      host = origin === 'null' ? null : new URL(origin).host.toLowerCase()
    } catch {
      host = null
    }
    if (host !== requestHost(request)) return `the form was sent from ${origin}, not from this dashboard`
  }
  const site = request.headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin' && site !== 'none') {
    return `the browser says the form came from a ${site} page`
  }
  return null
}

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * An HTML page. Never cached (pages show public keys and CSRF tokens), never framed
 * (clickjacking), and no referrer leaves the site (a sign-in link's token is in its URL).
 * Not `no-referrer`: with it, browsers send `Origin: null` on the pages' own form posts.
 */
export function htmlPage(status: number, body: Html, cookies: string[] = []): Response {
  const headers = new Headers({
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(body.value, { status, headers })
}

/** 303 See Other: after a POST the browser GETs the new page, and reload does not resubmit. */
export function redirect(location: string, cookies: string[] = [], status = 303): Response {
  const headers = new Headers({ location, 'cache-control': 'no-store' })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(null, { status, headers })
}
