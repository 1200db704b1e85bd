const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))
const RANDOM_BYTES = 10
// One call to the CSPRNG for 400 ids: it costs far more than the bytes it returns.
const pool = new Uint8Array(RANDOM_BYTES * 400)
let used = pool.length
// Ids of one millisecond share their first 48 bits: written once.
let lastMs = -1
let timeHex = ''

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Time-ordered, so
 * the service's id index stays compact; random enough that two senders never collide.
 */
export function uuidv7(nowMs: number): string {
  if (used + RANDOM_BYTES > pool.length) {
    crypto.getRandomValues(pool)
    used = 0
  }
  const ms = Math.max(0, Math.floor(nowMs))
  if (ms !== lastMs) {
    const hex = ms.toString(16).padStart(12, '0')
    timeHex = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-`
    lastMs = ms
  }
  const r = used
  used += RANDOM_BYTES
  const p = pool
  return (
    timeHex +
    HEX[0x70 | (p[r]! & 0x0f)]! + // version 7
    HEX[p[r + 1]!]! +
    '-' +
    HEX[0x80 | (p[r + 2]! & 0x3f)]! + // variant 10
    HEX[p[r + 3]!]! +
    '-' +
    HEX[p[r + 4]!]! +
    HEX[p[r + 5]!]! +
    HEX[p[r + 6]!]! +
    HEX[p[r + 7]!]! +
    HEX[p[r + 8]!]! +
    HEX[p[r + 9]!]!
  )
}
