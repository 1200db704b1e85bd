import { compileOriginMatcher, parseAllowedOrigin } from '../access/origin/index.ts'
import { NO_ORIGIN } from '../usage/recorder.ts'

export type NarrowestEntry = { ok: true; entry: string } | { ok: false; reason: string }

/**
 * The narrowest allowed-origin entry that covers a refused `origin` (issue 10): exactly its
 * scheme, host and port (`https://shop.example.com:8443`, or `https://shop.example.com` on
 * the default port). Never a registrable domain, which would also allow every subdomain:
 * a member who wants that types it. The entry goes through the same parser as typed
 * entries, and must match the origin with the same matcher as the API, or it is not offered.
 */
export function narrowestEntry(origin: string): NarrowestEntry {
  if (origin === NO_ORIGIN || origin === 'null') {
    return {
      ok: false,
      reason: 'Requests without an Origin (or with "null") match only "*", which allows every site; it is not offered here.',
    }
  }
  let url: URL | null = null
  try {
    url = /^https?:\/\/[^/?#@\s]+$/.test(origin) ? new URL(origin) : null
  } catch {
    url = null
  }
  // Only what a browser sends: the serialization must come back unchanged.
  if (!url || url.origin !== origin) {
    return {
      ok: false,
      reason: `${JSON.stringify(origin)} is not an origin a browser sends (scheme://host[:port]), so no entry is offered for it.`,
    }
  }
  const parsed = parseAllowedOrigin(url.port ? `${url.protocol}//${url.hostname}:${url.port}` : `${url.protocol}//${url.hostname}`)
  if (!parsed.ok) return { ok: false, reason: parsed.reason }
  if (!compileOriginMatcher([parsed.entry]).match(origin).allowed) {
    return { ok: false, reason: `No single entry covers exactly ${origin}.` }
  }
  return { ok: true, entry: parsed.entry }
}
