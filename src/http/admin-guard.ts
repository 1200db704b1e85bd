import type { ClientAddressOf, PeerSource } from '../shared/client-address.ts'
import type { FailureBudget } from '../access/rate-limit/failure-budget.ts'
import { ApiError } from '../errors.ts'
import { rateLimited } from '../access/rate-limit/answer.ts'
import { sameSecret } from '../access/secrets.ts'

export interface AdminGuardOptions {
  /** 401s per client address (RATE_LIMIT_ADMIN_AUTH_FAILURES); over it, 429 before any compare. */
  failures: FailureBudget
  clientAddress: ClientAddressOf
  /** The budget's clock (monotonic by default; tests move it). */
  clock?: () => number
}

/** Marks a request the guard has already passed (it runs in both parse and transform). */
const ADMITTED = Symbol('admin admitted')

/**
 * Checks `Authorization: Bearer <ADMIN_TOKEN>` in constant time (sameSecret). A client
 * address that drew too many 401s is answered 429 without a compare until its window has
 * passed, which makes guessing the token hopeless.
 */
export function createAdminGuard(adminToken: string, options: AdminGuardOptions) {
  return function requireAdmin({ request, set, server }: { request: Request; set: object; server: PeerSource | null }): void {
    const marks = set as { [ADMITTED]?: true }
    if (marks[ADMITTED]) return
    const now = options.clock?.() ?? performance.now()
    const address = options.clientAddress(request, server)
    const wait = options.failures.active(now) ? options.failures.blocked(address, now) : null
    if (wait !== null) throw rateLimited(wait, 'Too many requests with a wrong admin token came from this address')
    const header = request.headers.get('authorization') ?? ''
    const match = /^bearer +(\S+)$/i.exec(header)
    if (match && sameSecret(match[1]!, adminToken)) {
      marks[ADMITTED] = true
      return
    }
    options.failures.record(address, now)
    throw new ApiError(
      'unauthorized',
      'The admin API needs "Authorization: Bearer <ADMIN_TOKEN>" with the operator token the service was started with.',
      { headers: { 'www-authenticate': 'Bearer realm="admin"' } },
    )
  }
}

export type AdminGuard = ReturnType<typeof createAdminGuard>
