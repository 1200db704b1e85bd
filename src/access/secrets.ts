import { createHash, timingSafeEqual } from 'node:crypto'

/** Random tokens for cookies and links (256 bits from the CSPRNG) and their stored digest. */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/**
 * The one constant-time comparison of secrets (admin token, CSRF tokens). Both sides are
 * hashed first, so neither the content nor the length of the expected secret leaks
 * through timing, and timingSafeEqual always sees equal lengths.
 */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected))
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}
