import type { Server } from 'elysia/universal/server'

/**
 * The client's address as the request log shows it: the TCP peer for now. The rate
 * limiter's TRUST_PROXY-aware address (contract section 8) replaces this at merge, so
 * the log and the limiter agree on who the client is. Null under `app.handle` (no socket).
 */
export function clientAddress(request: Request, server: Server | null): string | null {
  return server?.requestIP(request)?.address ?? null
}
