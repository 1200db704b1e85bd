import { t } from 'elysia'
import { ApiError } from '../errors.ts'
import { Uuid } from '../shared/uuid.ts'
import { toKeyRecord, type ApiKeyRow, type KeyRecord, type KeyService } from '../keys/service.ts'
import type { Missing } from './failures.ts'
import { html } from './html.ts'
import { htmlPage } from './http.ts'
import type { SignedIn } from './sessions.ts'
import { messagePage } from './views.ts'

/** `/api-keys/:id`: a malformed id is the same 404 as another business's key (src/dashboard/failures.ts). */
export const KeyParams = t.Object({ id: Uuid })

export const MISSING_KEY: Missing = {
  title: 'Key not found',
  page: (member) => html`${member.businessName} has no such key. Check the address, or find the key in the list.`,
  json: 'No key with that id in your business.',
}

/**
 * Keys as a member may see them: every lookup is scoped to the member's business, so
 * another business's key is null, exactly like a missing one, on every route.
 */
export function ownKeys(keys: KeyService) {
  async function find(member: SignedIn, id: string): Promise<ApiKeyRow | null> {
    try {
      return await keys.get(member.businessId, id)
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return null
      throw error
    }
  }

  return {
    find,

    async record(member: SignedIn, id: string | null): Promise<KeyRecord | null> {
      const row = id ? await find(member, id) : null
      return row ? toKeyRecord(row) : null
    },

    /** For the pages' scripts: the key, or the API's 404 in the error envelope. */
    async require(member: SignedIn, id: string): Promise<ApiKeyRow> {
      const row = await find(member, id)
      if (!row) throw new ApiError('not_found', `No key with id ${id} in your business.`)
      return row
    },
  }
}

export type OwnKeys = ReturnType<typeof ownKeys>

export function keyNotFound(member: SignedIn): Response {
  return htmlPage(404, messagePage({ title: MISSING_KEY.title, who: member, message: MISSING_KEY.page(member) }))
}
