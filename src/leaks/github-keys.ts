import { createPublicKey, verify, type KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'

/** Where GitHub publishes the keys it signs secret-scanning reports with. */
export const GITHUB_SECRET_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning'

/** How long a fetched copy of GitHub's keys is used before it is fetched again. */
export const KEYS_CACHE_MS = 3_600_000
/** The least time between two fetches (a copy that is old or lacks an identifier is fetched again after it). */
const REFETCH_MS = 60_000
/** A fetch of the keys gives up after this; the last good copy is used meanwhile. */
const FETCH_TIMEOUT_MS = 5_000
/** The keys' document is a few kilobytes; anything much larger is not it. */
const MAX_DOCUMENT_BYTES = 256 * 1024

export interface SecretScanningKeysOptions {
  /** SECRET_SCANNING_PUBLIC_KEYS: a file holding GitHub's document; read again at each report. */
  file?: string
  /** Otherwise fetched from here (GitHub's URL unless a test serves its own on loopback). */
  url?: string
  now?: () => number
  /** Told when a fetch fails and the last good copy (or none) is used. */
  onFetchFailure?: (error: unknown) => void
}

export interface SecretScanningKeys {
  /**
   * True when `signature` (base64 DER ECDSA P-256 over SHA-256) of `body` verifies with the
   * key GitHub names `identifier`; false for an unknown identifier, a malformed signature or
   * a wrong one. Never throws for what the request sent.
   */
  verify(body: Uint8Array, identifier: string, signature: string): Promise<boolean>
}

/**
 * GitHub's secret-scanning public keys (docs/api.md, "When a key leaks"): from a file when
 * the operator names one, else fetched from GitHub, cached an hour, the last good copy kept
 * when a fetch fails, and fetched again for an identifier the copy does not hold, so a key
 * GitHub has just rotated in is found; never more than one fetch a minute.
 */
export function createSecretScanningKeys(options: SecretScanningKeysOptions = {}): SecretScanningKeys {
  const now = options.now ?? Date.now
  const url = options.url ?? GITHUB_SECRET_SCANNING_KEYS_URL
  let copy: { keys: Map<string, KeyObject>; fetchedAt: number } | null = null
  let lastTry = Number.NEGATIVE_INFINITY
  let inFlight: Promise<void> | null = null

  async function fetchKeys(): Promise<void> {
    lastTry = now()
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' })
      if (!response.ok) throw new Error(`${url} answered ${response.status}`)
      const text = await response.text()
      if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`${url} answered more than ${MAX_DOCUMENT_BYTES} bytes`)
      copy = { keys: parseKeysDocument(text), fetchedAt: now() }
    } catch (error) {
      options.onFetchFailure?.(error)
    }
  }

  function refresh(): Promise<void> {
    inFlight ??= fetchKeys().finally(() => {
      inFlight = null
    })
    return inFlight
  }

  async function keyFor(identifier: string): Promise<KeyObject | undefined> {
    if (options.file !== undefined) return parseKeysDocument(await readFile(options.file, 'utf8')).get(identifier)
    const stale = copy === null || now() - copy.fetchedAt >= KEYS_CACHE_MS || !copy.keys.has(identifier)
    // At most one fetch a minute, whatever is sent: a forger cannot make the service hammer GitHub.
    if (inFlight !== null) await inFlight
    else if (stale && now() - lastTry >= REFETCH_MS) await refresh()
    return copy?.keys.get(identifier)
  }

  return {
    async verify(body, identifier, signature) {
      const key = await keyFor(identifier)
      if (key === undefined) return false
      const der = Buffer.from(signature, 'base64')
      // Base64 that decodes to nothing, or to something else than what was sent, is no signature.
      if (der.length === 0 || der.toString('base64').replace(/=+$/, '') !== signature.replace(/=+$/, '')) return false
      try {
        return verify('sha256', body, { key, dsaEncoding: 'der' }, der)
      } catch {
        return false
      }
    },
  }
}

/** GitHub's document `{"public_keys": [{"key_identifier", "key" (PEM), "is_current"}]}`: the keys by identifier; entries that are not keys are skipped. */
export function parseKeysDocument(text: string): Map<string, KeyObject> {
  const document = JSON.parse(text) as { public_keys?: unknown }
  if (!Array.isArray(document.public_keys)) throw new Error('the secret-scanning keys document has no "public_keys" list')
  const keys = new Map<string, KeyObject>()
  for (const entry of document.public_keys as { key_identifier?: unknown; key?: unknown }[]) {
    if (typeof entry?.key_identifier !== 'string' || typeof entry.key !== 'string') continue
    try {
      keys.set(entry.key_identifier, createPublicKey(entry.key))
    } catch {
      // One unreadable key does not lose the others.
    }
  }
  return keys
}
