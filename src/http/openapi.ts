import { Elysia } from 'elysia'
import { toOpenAPISchema } from '@elysiajs/openapi'
// A 'file' import gives the path, and makes `bun build --compile` embed the bundle, so the
// binary serves the reference page with no network at all.
// @ts-expect-error: the default export of a { type: 'file' } import is a path string
import scalarBundlePath from '../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' }
import { API_TITLE, finishDocument } from './openapi-document.ts'

type Json = Record<string, unknown>

export const DOCS_SCRIPT_PATH = '/docs/scalar.js'

const EXCLUDE = { paths: [/^\/dashboard/, /^\/sdk/, /^\/docs/] }

/**
 * GET /openapi: the API reference, generated from the route schemas and finished by
 * finishDocument. GET /docs renders it with Scalar's standalone bundle, served from the
 * installed package (no CDN: a closed network can read it too).
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
    .get(
      '/docs',
      ({ set }) => {
        set.headers['content-type'] = 'text/html; charset=utf-8'
        return DOCS_PAGE
      },
      { detail: { hide: true } },
    )
    .get(
      DOCS_SCRIPT_PATH,
      ({ set }) => {
        set.headers['content-type'] = 'application/javascript; charset=utf-8'
        set.headers['cache-control'] = 'public, max-age=3600'
        return Bun.file(scalarBundlePath as string)
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

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${API_TITLE} reference</title>
</head>
<body>
  <div id="app"></div>
  <script src="${DOCS_SCRIPT_PATH}"></script>
  <script>Scalar.createApiReference('#app', ${JSON.stringify(SCALAR_CONFIG)})</script>
</body>
</html>
`
