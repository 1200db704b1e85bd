const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))
const RANDOM_BYTES = 10
// One call to the CSPRNG for 400 ids: it costs far more than the bytes it returns.
const pool = new Uint8Array(RANDOM_BYTES * 400)
let used = pool.length

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Time-ordered, so
 * the service's id index stays compact; random enough that two senders never collide.
 */
export function uuidv7(nowMs: number): string {
  if (used + RANDOM_BYTES > pool.length) {
    crypto.getRandomValues(pool)
    used = 0
  }
  const r = used
  used += RANDOM_BYTES
  const ms = Math.max(0, Math.floor(nowMs))
  const high = Math.floor(ms / 0x10000) // the top 32 of the 48 bits
  const low = ms % 0x10000
  const bytes = [
    (high >>> 24) & 0xff,
    (high >>> 16) & 0xff,
    (high >>> 8) & 0xff,
    high & 0xff,
    low >>> 8,
    low & 0xff,
    0x70 | (pool[r]! & 0x0f), // version 7
    pool[r + 1]!,
    0x80 | (pool[r + 2]! & 0x3f), // variant 10
    pool[r + 3]!,
    pool[r + 4]!,
    pool[r + 5]!,
    pool[r + 6]!,
    pool[r + 7]!,
    pool[r + 8]!,
    pool[r + 9]!,
  ]
  const hex = bytes.map((byte) => HEX[byte]).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
