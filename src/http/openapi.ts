import { Elysia } from 'elysia'
import { toOpenAPISchema } from '@elysiajs/openapi'
// A 'file' import gives the path, and makes `bun build --compile` embed the bundle, so the
// binary serves the reference page with no network at all.
// @ts-expect-error: the default export of a { type: 'file' } import is a path string
import scalarBundlePath from '../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' }
import { API_TITLE, finishDocument } from './openapi-document.ts'
import { staticAsset } from './static-asset.ts'

type Json = Record<string, unknown>

export const DOCS_SCRIPT_PATH = '/docs/scalar.js'

const EXCLUDE = { paths: [/^\/dashboard/, /^\/sdk/, /^\/docs/] }

/** The page's script URL carries the bundle's hash, so that URL may be cached for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable'
/** The bundle asked without its current hash (an old page, a hand-typed URL): revalidated hourly. */
const UNVERSIONED = 'public, max-age=3600'

/**
 * Scalar's bundle, read and compressed on the first request that wants it. Brotli at
 * quality 5: 11 costs a first visitor far too long on a file this size, for a few percent
 * fewer bytes (docs/decisions.md, "Assets served compressed").
 */
const scalarBundle = staticAsset(() => Bun.file(scalarBundlePath as string).bytes(), {
  contentType: 'application/javascript; charset=utf-8',
  cacheControl: UNVERSIONED,
  brotliQuality: 5,
  headers: { 'x-content-type-options': 'nosniff' },
})

/** The page names the bundle's version, so it is revalidated on every view (a 304 when unchanged). */
const docsPage = staticAsset(async () => docsPageHtml(`${DOCS_SCRIPT_PATH}?v=${await scalarBundle.version()}`), {
  contentType: 'text/html; charset=utf-8',
  cacheControl: 'no-cache',
})

/**
 * GET /openapi: the API reference, generated from the route schemas and finished by
 * finishDocument. GET /docs renders it with Scalar's standalone bundle, served from the
 * installed package (no CDN: a closed network can read it too), compressed and cacheable.
 */
export function apiReference() {
  let document: Json | undefined
  const app: Elysia = new Elysia({ name: 'api-reference' })
  return app
    .get(
      '/openapi',
      function openapiDocument() {
        // Built on the first request: by then every plugin has added its routes.
        document ??= finishDocument(toOpenAPISchema(app, EXCLUDE) as never)
        return document
      },
      { detail: { hide: true } },
    )
    .get('/docs', ({ request }) => docsPage.serve(request), { detail: { hide: true } })
    .get(
      DOCS_SCRIPT_PATH,
      async ({ request, query }) => {
        const current = query.v !== undefined && query.v === (await scalarBundle.version())
        return scalarBundle.serve(request, current ? IMMUTABLE : UNVERSIONED)
      },
      { detail: { hide: true } },
    )
}

// Scalar's defaults reach out (fonts, telemetry, its agent and hosted client); all off.
const SCALAR_CONFIG = {
  url: '/openapi',
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  hideClientButton: true,
  showDeveloperTools: 'never',
  documentDownloadType: 'json',
}

const docsPageHtml = (scriptUrl: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${API_TITLE} reference</title>
</head>
<body>
  <div id="app"></div>
  <script src="${scriptUrl}"></script>
  <script>Scalar.createApiReference('#app', ${JSON.stringify(SCALAR_CONFIG)})</script>
</body>
</html>
`
