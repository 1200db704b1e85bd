import { Elysia } from 'elysia'
import { buildSnippet } from '../sdk/index.ts'
import { staticAsset } from './static-asset.ts'

export const SNIPPET_PATH = '/sdk/v0.js'

/**
 * v0.js changes within v0 (fixes, compatible additions) under the same URL, so browsers and
 * CDNs keep it one hour and may use a stale copy for a day while they revalidate; the ETag
 * makes revalidation a 304. `immutable` would be right only for a URL that never changes.
 */
export const SNIPPET_CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400'

/** The snippet as served: minified, compressed on first request (docs/snippet.md). */
export const snippetAsset = staticAsset(buildSnippet, {
  contentType: 'application/javascript; charset=utf-8',
  cacheControl: SNIPPET_CACHE_CONTROL,
  headers: {
    'x-content-type-options': 'nosniff',
    // Lets pages load it with `crossorigin` (readable error stacks); the script holds no secret.
    'access-control-allow-origin': '*',
    // Sites may measure what the snippet costs them (Resource Timing's sizes and times).
    'timing-allow-origin': '*',
  },
})

/** GET /sdk/v0.js: the tracking snippet web pages include with their public key. */
export function sdkRoutes() {
  return new Elysia({ name: 'sdk' }).get(SNIPPET_PATH, ({ request }) => snippetAsset.serve(request), {
    detail: { summary: 'The browser tracking snippet (no key needed)', tags: ['sdk'] },
  })
}
