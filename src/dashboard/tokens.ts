import { createHash, timingSafeEqual } from 'node:crypto'

/** Random tokens for cookies and links (256 bits from the CSPRNG) and their stored digest. */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** Constant-time comparison; both sides are hashed first so that lengths do not leak. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
}
