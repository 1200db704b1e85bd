import { MAX_BODY_BYTES } from './request-body.ts'

/**
 * Options of the listening socket (src/index.ts; tests that listen use the same).
 *
 * Bun's HTTP parser answers some requests itself, before any JavaScript runs: headers over
 * its 16 KiB limit (431), a malformed request line, Content-Length or chunked encoding
 * (400), a body over `maxRequestBodySize` (413). Those answers are bare, without the error envelope or X-Request-Id: Bun.serve's
 * `error` handler only sees errors thrown by `fetch`, and Bun 1.4 has no hook for parser
 * refusals. So the socket's body limit sits far above the 1 MiB every route takes: each
 * route reads at most 1 MiB (src/http/request-body.ts) and refuses a larger body by its
 * Content-Length, unread, with the envelope; Bun's bare 413 is left for bodies over 64 MiB,
 * and bounds what a route that read without a limit could take.
 */
export const SERVER_OPTIONS = {
  // Elysia turns port sharing on by default: two instances would split one port silently.
  reusePort: false,
  maxRequestBodySize: 64 * MAX_BODY_BYTES,
} as const
