import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { decodePosition, positionCursor, type Position } from '../shared/paging.ts'
import { listChanges } from '../audit/trail.ts'
import { toKeyRecord, type KeyRecord, type KeyService } from '../keys/service.ts'
import { auditPage } from './audit-views.ts'
import { renderFailures } from './failures.ts'
import { FormField } from './forms.ts'
import { htmlPage } from './http.ts'
import type { memberMacro } from './member.ts'
import { KeyParams, keyNotFound, MISSING_KEY, type OwnKeys } from './own-keys.ts'
import type { SignedIn } from './sessions.ts'

/** Entries on a page of the trail. */
const TRAIL_PAGE = 50

const TrailQuery = t.Object({ cursor: FormField })

/** The audit trail, of the business and of one key, newest first. */
export function auditPlugin(deps: { db: Db; keys: KeyService; ownKeys: OwnKeys; member: ReturnType<typeof memberMacro> }) {
  const { db, keys, ownKeys } = deps

  /** A page of the trail, scoped to the member's business (and to `key`). */
  async function trailPage(member: SignedIn, cursor: string | undefined, key?: KeyRecord): Promise<Response> {
    let after: Position | null = null
    try {
      after = decodePosition(cursor)
    } catch {
      after = null // a mangled cursor: the newest page
    }
    const [rows, all] = await Promise.all([
      listChanges(db, { businessId: member.businessId, keyId: key?.id, after, limit: TRAIL_PAGE + 1 }),
      keys.list(member.businessId),
    ])
    const entries = rows.slice(0, TRAIL_PAGE)
    const last = entries.at(-1)
    const next = rows.length > TRAIL_PAGE && last ? positionCursor(last.at, last.id) : null
    return htmlPage(
      200,
      auditPage(member, { entries, keys: new Map(all.map((k) => [k.id, k])), now: new Date(), next, key, first: after === null }),
    )
  }

  return new Elysia({ name: 'dashboard/audit' })
    .use(deps.member)
    .onError(renderFailures(MISSING_KEY))
    .get('/settings/audit', ({ member, query }) => trailPage(member, query.cursor), { member: 'page', query: TrailQuery })
    .get(
      '/settings/developers/api-keys/:id/audit',
      async ({ member, params, query }) => {
        const row = await ownKeys.find(member, params.id)
        if (!row) return keyNotFound(member)
        return trailPage(member, query.cursor, toKeyRecord(row))
      },
      { member: 'page', params: KeyParams, query: TrailQuery },
    )
}
