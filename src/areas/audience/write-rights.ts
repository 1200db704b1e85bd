import type { ActiveKey } from '../../access/key-store.ts'
import { hasVerifiedIdentity } from '../../identity/secret.ts'

/**
 * Who may change stored people and companies (contract sections 6 and 12). Private keys
 * update freely. A public key is public: its records create what does not exist and change
 * nothing stored, unless a person record carries a verified identity (an `identityHash`
 * of its externalId, else its lower-cased email, under the business's identity secret),
 * which lets it update that person as a private key would. Companies have no verified
 * identity: public company writes only create.
 */
export function mayUpdateStored(
  key: Pick<ActiveKey, 'type'>,
  identitySecret: string | null = null,
): (record: Record<string, unknown>) => boolean {
  if (key.type === 'private') return updateFreely
  return (record) => hasVerifiedIdentity(identitySecret, record)
}

const updateFreely = () => true

/**
 * Whether a public key may remove this ref from a list: always before the business has an
 * identity secret (the seed's public removal), and once it has one, only with a valid hash.
 */
export function mayRemoveMember(key: Pick<ActiveKey, 'type'>, identitySecret: string | null, ref: Record<string, unknown>): boolean {
  if (key.type === 'private' || identitySecret === null) return true
  return hasVerifiedIdentity(identitySecret, ref)
}
