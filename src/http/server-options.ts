import { MAX_BODY_BYTES } from './request-body.ts'

/**
 * Options of the listening socket (src/index.ts; tests that listen use the same).
 *
 * Bun's HTTP parser answers some requests itself, before any JavaScript runs: headers over
 * its 16 KiB limit (431), a malformed request line (400), a body over `maxRequestBodySize`
 * (413). Those answers are bare, without the error envelope or X-Request-Id: Bun.serve's
 * `error` handler only sees errors thrown by `fetch`, and Bun 1.4 has no hook for parser
 * refusals. The body limit is set a little over the API's 1 MiB so that every body a
 * client could reasonably send is refused by the API, with the envelope, before the
 * socket's bare 413 applies.
 */
export const SERVER_OPTIONS = {
  // Elysia turns port sharing on by default: two instances would split one port silently.
  reusePort: false,
  maxRequestBodySize: MAX_BODY_BYTES + 64 * 1024,
} as const
