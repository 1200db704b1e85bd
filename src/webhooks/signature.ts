import { createHmac, randomBytes } from 'node:crypto'

/** A new endpoint's signing secret: `whsec_` and the base64 of 32 random bytes (the Standard Webhooks form). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * The Standard Webhooks headers of one delivery (docs/webhooks.md, "Verifying a delivery"):
 * `webhook-signature` is `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the
 * secret's decoded bytes. The same `id` on every retry lets a receiver drop repeats.
 */
export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  }
}
