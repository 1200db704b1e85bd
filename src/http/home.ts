import { createHash } from 'node:crypto'
import { Elysia } from 'elysia'

/** A key on the dashboard's accent colour, drawn small enough to read at 16 px. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2453c7"/><circle cx="11" cy="16" r="5" fill="none" stroke="#fff" stroke-width="3"/><path d="M16 16h11M22 16v5M27 16v4" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/></svg>`

/** Where a newcomer goes from `/`; /docs is the API reference page. */
export const HOME_LINKS = [
  { href: '/dashboard', label: 'Dashboard', text: "manage your business's API keys (members sign in here)" },
  { href: '/docs', label: 'API reference', text: 'every route, its scope, its answers and its errors' },
  { href: '/openapi', label: 'OpenAPI document', text: 'the same reference as JSON, for client generators' },
  { href: '/healthz', label: 'Health', text: 'liveness; /readyz answers 200 while the database does' },
] as const

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;color:#1c2430;max-width:40rem;margin:3rem auto;padding:0 1.5rem}
h1{display:flex;gap:.6rem;align-items:center;margin:0 0 .25rem}h1 img{width:2rem;height:2rem}
p{color:#5b6574;margin:0 0 1.5rem}li{margin:.4rem 0}a{color:#2453c7;font-weight:600}`

const HOME_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>keygate</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>${STYLE}</style>
</head>
<body>
<main>
<h1><img src="/favicon.svg" alt="">keygate</h1>
<p>The key-gated engagement API. API calls go to <code>/api/v0</code> with <code>Authorization: Bearer &lt;key&gt;</code>.</p>
<ul>
${HOME_LINKS.map((link) => `<li><a href="${link.href}">${link.label}</a>: ${link.text}</li>`).join('\n')}
</ul>
</main>
</body>
</html>
`

// The one inline style is allowed by its hash; nothing else runs or loads but the icon.
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64')
const HOME_POLICY = `default-src 'none'; img-src 'self'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

/**
 * `GET /`: a page that leads somewhere (the dashboard, the API reference), and the
 * favicon browsers ask every page of the site for. Outside the key chain.
 */
export function homeRoutes() {
  const favicon = () =>
    new Response(FAVICON_SVG, {
      headers: {
        'content-type': 'image/svg+xml',
        'cache-control': 'public, max-age=86400',
        'x-content-type-options': 'nosniff',
      },
    })
  return (
    new Elysia({ name: 'home' })
      .get(
        '/',
        () =>
          new Response(HOME_HTML, {
            headers: {
              'content-type': 'text/html; charset=utf-8',
              'cache-control': 'no-cache',
              'content-security-policy': HOME_POLICY,
              'x-content-type-options': 'nosniff',
              'x-frame-options': 'DENY',
            },
          }),
        { detail: { hide: true } },
      )
      // Browsers ask for /favicon.ico unless a page names another icon; both are the SVG.
      .get('/favicon.svg', favicon, { detail: { hide: true } })
      .get('/favicon.ico', favicon, { detail: { hide: true } })
  )
}
