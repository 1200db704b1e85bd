/** A request came over https: itself, or through a proxy that says so (`X-Forwarded-Proto`). */
export function isHttps(request: Request): boolean {
  const forwarded = request.headers.get('x-forwarded-proto')
  if (forwarded) return forwarded.split(',')[0]!.trim().toLowerCase() === 'https'
  return request.url.startsWith('https:')
}

/** The host the browser addressed: what a proxy forwarded, else the Host header, else the URL's. */
export function requestHost(request: Request): string {
  const forwarded = request.headers.get('x-forwarded-host')
  if (forwarded) return forwarded.split(',')[0]!.trim().toLowerCase()
  return (request.headers.get('host') ?? new URL(request.url).host).toLowerCase()
}

/** The origin pages of this service are served from, for links and the tracking snippet. */
export function publicOrigin(request: Request): string {
  return `${isHttps(request) ? 'https' : 'http'}://${requestHost(request)}`
}
