import { createHash, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../errors.ts'

/**
 * Checks `Authorization: Bearer <ADMIN_TOKEN>` in constant time: both sides are hashed
 * first so neither the content nor the length of the token leaks through timing.
 */
export function createAdminGuard(adminToken: string) {
  const expected = createHash('sha256').update(adminToken).digest()
  return function requireAdmin({ request }: { request: Request }): void {
    const header = request.headers.get('authorization') ?? ''
    const match = /^bearer +(\S+)$/i.exec(header)
    const given = createHash('sha256').update(match?.[1] ?? '').digest()
    if (!match || !timingSafeEqual(given, expected)) {
      throw new ApiError(
        'unauthorized',
        'The admin API needs "Authorization: Bearer <ADMIN_TOKEN>" with the operator token the service was started with.',
        { 'www-authenticate': 'Bearer realm="admin"' },
      )
    }
  }
}
