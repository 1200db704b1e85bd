import { and, eq, inArray, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys, type KeyLeak } from '../../db/schema/index.ts'
import { byService, recordChange } from '../audit/trail.ts'
import { hashKey, isKeyShaped } from '../access/key-format.ts'
import { recordWebhookEvent } from '../webhooks/outbox.ts'

/** LEAKED_KEY_POLICY: what happens to a live private key found in a public place. */
export type LeakPolicy = 'revoke' | 'notify'

/** One token a scanner (or a person) found, as GitHub reports it. */
export interface ReportedToken {
  token: string
  /** The pattern's name at the reporter's end, echoed in the answer. */
  type: string
  url: string | null
  /** Where it was found (GitHub: `content`, `commit`, `gist`, `npm`...); `report` for /security/leaked-keys. */
  source: string
}

/** GitHub's answer for one token: `true_positive` for a private key the service issued, whatever its state. */
export interface TokenVerdict {
  token_hash: string
  token_type: string
  label: 'true_positive' | 'false_positive'
}

export interface LeakResponder {
  /** Labels each token and acts on each live private key among them (docs/api.md, "When a key leaks"). */
  respond(tokens: readonly ReportedToken[], requestId?: string): Promise<TokenVerdict[]>
}

/**
 * A reported private key is compromised: under `revoke` it is revoked at once; under
 * `notify` it keeps working, flagged. Either way the key's `leak` is set, the trail gets
 * `key.leaked` (where, who reported, what was done; never the key) and the business's
 * webhooks the event `key.leaked`, all in one transaction; then `onKeyChange` (this
 * instance's key cache; the others hear the table's notification). A key already reported
 * is left as it is: a report sent again changes nothing and answers the same.
 * Public keys are public by design, and nothing is done about them.
 */
export function createLeakResponder(
  db: Db,
  options: { policy: LeakPolicy; onKeyChange: (keyHash: string) => void; now?: () => Date },
): LeakResponder {
  const now = options.now ?? (() => new Date())

  async function act(keyId: string, token: ReportedToken, requestId: string | undefined): Promise<string | null> {
    return db.transaction(async (tx) => {
      const [key] = await tx.select().from(apiKeys).where(eq(apiKeys.id, keyId)).for('update')
      const at = now()
      if (!key || key.leak !== null || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= at)) return null
      const revoke = options.policy === 'revoke'
      const leak: KeyLeak = { reportedAt: at.toISOString(), url: token.url, source: token.source, action: revoke ? 'revoked' : 'notified' }
      await tx
        .update(apiKeys)
        .set({ leak, updatedAt: at, ...(revoke ? { revokedAt: at } : {}) })
        .where(and(eq(apiKeys.id, key.id), isNull(apiKeys.leak)))
      await recordChange(tx, {
        businessId: key.businessId,
        action: 'key.leaked',
        by: byService(requestId),
        keyId: key.id,
        changes: {
          foundAt: { from: null, to: token.url },
          source: { from: null, to: token.source },
          action: { from: null, to: leak.action },
          ...(revoke ? { revokedAt: { from: null, to: leak.reportedAt } } : {}),
        },
      })
      await recordWebhookEvent(tx, {
        businessId: key.businessId,
        type: 'key.leaked',
        payload: { keyId: key.id, name: key.name, keyHint: key.keyHint, ...leak },
      })
      return key.keyHash
    })
  }

  return {
    async respond(tokens, requestId) {
      const hashes = new Map<string, string>()
      for (const { token } of tokens) if (isKeyShaped(token)) hashes.set(token, hashKey(token))
      const found =
        hashes.size === 0
          ? []
          : await db
              .select({ id: apiKeys.id, keyHash: apiKeys.keyHash, type: apiKeys.type })
              .from(apiKeys)
              .where(inArray(apiKeys.keyHash, [...new Set(hashes.values())]))
      const byHash = new Map(found.map((key) => [key.keyHash, key]))
      const acted = new Set<string>()
      const verdicts: TokenVerdict[] = []
      for (const token of tokens) {
        const hash = hashes.get(token.token)
        const key = hash === undefined ? undefined : byHash.get(hash)
        const issuedPrivate = key !== undefined && key.type === 'private'
        if (issuedPrivate && !acted.has(key.id)) {
          acted.add(key.id)
          const changed = await act(key.id, token, requestId)
          if (changed !== null) options.onKeyChange(changed)
        }
        verdicts.push({
          token_hash: hash ?? hashKey(token.token),
          token_type: token.type,
          label: issuedPrivate ? 'true_positive' : 'false_positive',
        })
      }
      return verdicts
    },
  }
}
