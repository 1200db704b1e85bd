/**
 * The key wire format: `pk_` or `sk_` then 20-40 characters of [A-Za-z0-9]. Generated keys
 * carry 32 characters from the CSPRNG. Keys are found by the hex SHA-256 of the whole key.
 */
export type KeyType = 'public' | 'private'

const KEY_PATTERN = /^(?:pk|sk)_[A-Za-z0-9]{20,40}$/
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const GENERATED_LENGTH = 32

export function generateKey(type: KeyType): string {
  // 62 does not divide 256: rejection sampling keeps every character equally likely.
  const out: string[] = []
  while (out.length < GENERATED_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(48))) {
      if (byte < 248 && out.length < GENERATED_LENGTH) out.push(ALPHABET[byte % 62]!)
    }
  }
  return (type === 'public' ? 'pk_' : 'sk_') + out.join('')
}

/** Bun's native SHA-256: about 0.1 µs a key, 17x faster than WebCrypto's async digest. */
export function hashKey(key: string): string {
  return Bun.SHA256.hash(key, 'hex') as string
}

/** The redacted form shown in lists: prefix and last four characters only. */
export function keyHint(key: string): string {
  return `${key.slice(0, 3)}…${key.slice(-4)}`
}

export type BearerResult = { ok: true; key: string } | { ok: false; code: 'missing_api_key' | 'malformed_api_key'; message: string }

/**
 * Reads `Authorization: Bearer <key>` (RFC 6750: scheme case-insensitive, one or more
 * spaces). Anything else is malformed: another scheme, a tab, quotes, two header values
 * (which arrive joined by ", "), a character outside the key alphabet.
 */
export function readBearer(header: string | null): BearerResult {
  if (header === null) {
    return {
      ok: false,
      code: 'missing_api_key',
      message: 'No API key was sent. Send it as the header "Authorization: Bearer <key>".',
    }
  }
  let i = 6
  // The usual spelling first, without allocating; any other case of the scheme is accepted too.
  if (header.length < 8 || header.charCodeAt(6) !== 32 || (!header.startsWith('Bearer') && header.slice(0, 6).toLowerCase() !== 'bearer')) {
    return malformed('The Authorization header is not of the form "Bearer <key>". Send "Authorization: Bearer pk_..." or "Bearer sk_...".')
  }
  while (header.charCodeAt(i) === 32) i++
  const key = header.slice(i)
  if (!KEY_PATTERN.test(key)) {
    return malformed(
      'The API key is malformed: a key is "pk_" or "sk_" followed by 20 to 40 letters and digits, with nothing around it. Copy the key again from the dashboard.',
    )
  }
  return { ok: true, key }
}

function malformed(message: string): BearerResult {
  return { ok: false, code: 'malformed_api_key', message }
}
