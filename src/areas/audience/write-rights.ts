import type { ActiveKey } from '../../access/key-store.ts'

/**
 * Who may change stored people and companies (contract section 6). Private keys update
 * freely. A public key is public: its records create what does not exist and change
 * nothing stored, unless the record carries a verified identity for that person (section
 * 12: an `identityHash` under the business's identity secret), which this service does not
 * check yet, so today no public record changes a stored one. When it does, a verified
 * record may change a person's other fields, never their email or externalId.
 */
export function mayUpdateStored(key: Pick<ActiveKey, 'type'>): (record: Record<string, unknown>) => boolean {
  return key.type === 'private' ? updateFreely : verifiedIdentity
}

const updateFreely = () => true

/** The seam for section 12's verified identity: no record is verified yet. */
function verifiedIdentity(_record: Record<string, unknown>): boolean {
  return false
}
