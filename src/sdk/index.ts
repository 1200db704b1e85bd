import { Elysia } from 'elysia'
// A 'file' import gives the source's path, and makes `bun build --compile` embed the file,
// so the binary can build the snippet too. TypeScript cannot type such an import.
// @ts-expect-error: the default export of a { type: 'file' } import is a path string
import snippetSourceFile from './snippet.ts' with { type: 'file' }

export interface BuiltSnippet {
  /** Minified browser JavaScript. */
  code: string
  /** Strong ETag of `code`, quoted. */
  etag: string
}

/**
 * v0.js changes within v0 (fixes, compatible additions), so browsers keep it one hour and
 * may use a stale copy for a day while they revalidate; the ETag makes revalidation a 304.
 * `immutable` would be right only for a URL that never changes content.
 */
export const SNIPPET_CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400'

let built: Promise<BuiltSnippet> | undefined

/** Minifies src/sdk/snippet.ts in memory, once per process (a few milliseconds). */
export function buildSnippet(): Promise<BuiltSnippet> {
  built ??= (async () => {
    // `export {}` only makes TypeScript check the file as a module; the browser gets a
    // classic script, and an ES module entry would cost an interop wrapper in the IIFE.
    const source = (await Bun.file(snippetSourceFile).text()).replace(/^export \{\}$/m, '')
    // A virtual entry: the same call works from the repository and inside the binary.
    const entry = '/keygate-sdk/snippet.ts'
    const result = await Bun.build({
      entrypoints: [entry],
      files: { [entry]: source },
      target: 'browser',
      format: 'iife',
      minify: true,
    })
    const output = result.outputs[0]
    if (!result.success || !output) throw new AggregateError(result.logs, 'building the SDK snippet failed')
    const code = (await output.text()).trim()
    const etag = `"${new Bun.CryptoHasher('sha256').update(code).digest('base64url').slice(0, 22)}"`
    return { code, etag }
  })()
  return built
}

/** GET /sdk/v0.js: the tracking snippet web pages include with their public key (docs/snippet.md). */
export function sdkRoutes() {
  // Build at start-up rather than on a visitor's first request; errors surface on the route.
  buildSnippet().catch(() => {})
  return new Elysia({ name: 'sdk' }).get(
    '/sdk/v0.js',
    async ({ request, set }) => {
      const { code, etag } = await buildSnippet()
      const headers = set.headers as Record<string, string>
      headers['content-type'] = 'application/javascript; charset=utf-8'
      headers['cache-control'] = SNIPPET_CACHE_CONTROL
      headers.etag = etag
      headers['x-content-type-options'] = 'nosniff'
      // Lets pages load it with `crossorigin` (readable error stacks); the script holds no secret.
      headers['access-control-allow-origin'] = '*'
      if (matchesEtag(request.headers.get('if-none-match'), etag)) {
        set.status = 304
        return ''
      }
      return code
    },
    { detail: { summary: 'The browser tracking snippet (no key needed)', tags: ['sdk'] } },
  )
}

function matchesEtag(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim()
    return value === '*' || value === etag || value === `W/${etag}`
  })
}
