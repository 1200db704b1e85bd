import type { NewMemberBody } from '../admin/members.ts'
import type { Business, BusinessChangesBody, KeyChangesBody, NewKeyBody } from '../admin/model.ts'
import type { ErasureRecord, ErasureTarget } from '../events/erasure.ts'
import type { Flow } from '../flows/model.ts'
import type { KeyRecord } from '../keys/model.ts'
import type { MemberRecord, SignInLinkRecord } from '../members/model.ts'
import type { AuditEntrySchema } from '../admin/audit.ts'
import type { UsageSchema } from '../admin/usage.ts'
import type { DeliveryRecord, EndpointRecord } from '../webhooks/model.ts'
/**
 * The CLI's view of `/admin/v0`: one HTTP call per method, errors
 * turned into values the CLI can print. Knows nothing about terminals.
 */

/** The server refused: its `error.code` and message, as the error envelope carries them. */
export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
  ) {
    super(message)
  }
}

/** No HTTP answer at all: wrong URL, server down, timeout. */
export class ConnectionError extends Error {}

/** How far back `keys usage` looks, per interval: a day by hour, an hour by minute, a week by day. */
const USAGE_SPAN = { minute: 3_600_000, hour: 86_400_000, day: 7 * 86_400_000 } as const

export type KeyUsage = typeof UsageSchema.static
export type { DeliveryRecord, EndpointRecord }
export type CreatedEndpoint = EndpointRecord & { secret: string }
export interface NewEndpoint {
  url: string
  events: string[]
  description?: string
}
export type EndpointChanges = Partial<NewEndpoint & { enabled: boolean }>
export type AuditEntry = typeof AuditEntrySchema.static

// The shapes are the server's own schemas: a change there is a type error here.
export type { Business, Flow, KeyRecord }
export type NewKey = NewKeyBody
export type KeyChanges = KeyChangesBody
export type BusinessChanges = BusinessChangesBody
export type Erasure = ErasureRecord

export interface CreatedKey extends KeyRecord {
  key: string
}

/** A run of a flow, as GET /admin/v0/flows/:id/runs answers it. */
export interface FlowRun {
  id: string
  flowId: string
  status: 'queued' | 'running' | 'succeeded' | 'failed'
  input: Record<string, unknown> | null
  idempotencyKey: string | null
  keyId: string
  createdAt: string
}

/** A page of an admin list: pass `nextCursor` back as `cursor` for the next one. */
export interface Page<T> {
  data: T[]
  nextCursor: string | null
}

/** `limit` and `cursor` of an admin list; each left out when not given. */
export interface PageRequest {
  limit?: string
  cursor?: string
}

export type Member = MemberRecord
export type SignInLink = SignInLinkRecord
export type NewMember = NewMemberBody

/** The create answer: a sign-in link when no password was given. */
export type CreatedMember = Member & { signInLink?: SignInLink }

const TIMEOUT_MS = 30_000

export function createAdminClient(baseUrl: string, token: string) {
  const root = baseUrl.replace(/\/+$/, '') + '/admin/v0'

  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = root + path
    let response: Response
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      throw new ConnectionError(`cannot reach keygate at ${baseUrl} (${reason}). Check --url or KEYGATE_URL.`)
    }
    if (response.status === 204) return undefined as T
    const text = await response.text()
    const parsed = parseJson(text)
    if (!response.ok) throw toApiError(response, parsed, text)
    if (parsed === undefined) {
      throw new ConnectionError(`${baseUrl} answered ${response.status} without JSON: is it a keygate server?`)
    }
    return parsed as T
  }

  const id = encodeURIComponent
  const paged = (path: string, page: PageRequest = {}) => {
    const query = new URLSearchParams()
    if (page.limit !== undefined) query.set('limit', page.limit)
    if (page.cursor !== undefined) query.set('cursor', page.cursor)
    return query.size === 0 ? path : `${path}?${query}`
  }
  return {
    createBusiness: (name: string) => request<Business>('POST', '/businesses', { name }),
    listBusinesses: (page?: PageRequest) => request<Page<Business>>('GET', paged('/businesses', page)),
    getBusiness: (businessId: string) => request<Business>('GET', `/businesses/${id(businessId)}`),
    updateBusiness: (businessId: string, changes: BusinessChanges) => request<Business>('PATCH', `/businesses/${id(businessId)}`, changes),
    eraseEvents: (businessId: string, target: ErasureTarget) =>
      request<{ id: string; status: 'pending' }>('POST', `/businesses/${id(businessId)}/erasures`, target),
    getErasure: (businessId: string, erasureId: string) =>
      request<Erasure>('GET', `/businesses/${id(businessId)}/erasures/${id(erasureId)}`),
    createKey: (businessId: string, key: NewKey) => request<CreatedKey>('POST', `/businesses/${id(businessId)}/keys`, key),
    listKeys: (businessId: string, page?: PageRequest) =>
      request<Page<KeyRecord>>('GET', paged(`/businesses/${id(businessId)}/keys`, page)),
    getKey: (keyId: string) => request<KeyRecord>('GET', `/keys/${id(keyId)}`),
    updateKey: (keyId: string, changes: KeyChanges) => request<KeyRecord>('PATCH', `/keys/${id(keyId)}`, changes),
    revokeKey: (keyId: string) => request<void>('DELETE', `/keys/${id(keyId)}`),
    /** Without `graceSeconds`, the server's default grace (a day). */
    rollKey: (keyId: string, graceSeconds?: number) =>
      request<CreatedKey>('POST', `/keys/${id(keyId)}/roll`, graceSeconds === undefined ? {} : { graceSeconds }),
    keyUsage: (keyId: string, interval: string) =>
      request<KeyUsage>(
        'GET',
        `/keys/${id(keyId)}/usage?interval=${id(interval)}&from=${id(new Date(Date.now() - USAGE_SPAN[interval as keyof typeof USAGE_SPAN]).toISOString())}`,
      ),
    businessAudit: (businessId: string, page?: PageRequest) =>
      request<Page<AuditEntry>>('GET', paged(`/businesses/${id(businessId)}/audit`, page)),
    keyAudit: (keyId: string, page?: PageRequest) => request<Page<AuditEntry>>('GET', paged(`/keys/${id(keyId)}/audit`, page)),
    setIdentitySecret: (businessId: string) => request<{ secret: string }>('POST', `/businesses/${id(businessId)}/identity-secret`),
    createFlow: (businessId: string, name: string) => request<Flow>('POST', `/businesses/${id(businessId)}/flows`, { name }),
    listFlows: (businessId: string, page?: PageRequest) => request<Page<Flow>>('GET', paged(`/businesses/${id(businessId)}/flows`, page)),
    listRuns: (flowId: string, page?: PageRequest) => request<Page<FlowRun>>('GET', paged(`/flows/${id(flowId)}/runs`, page)),
    createMember: (businessId: string, member: NewMember) =>
      request<CreatedMember>('POST', `/businesses/${id(businessId)}/members`, member),
    listMembers: (businessId: string, page?: PageRequest) =>
      request<Page<Member>>('GET', paged(`/businesses/${id(businessId)}/members`, page)),
    issueSignInLink: (memberId: string) => request<{ signInLink: SignInLink }>('POST', `/members/${id(memberId)}/sign-in-link`),
    removeMember: (memberId: string) => request<void>('DELETE', `/members/${id(memberId)}`),
    createEndpoint: (businessId: string, endpoint: NewEndpoint) =>
      request<CreatedEndpoint>('POST', `/businesses/${id(businessId)}/webhooks`, endpoint),
    listEndpoints: (businessId: string) => request<{ data: EndpointRecord[] }>('GET', `/businesses/${id(businessId)}/webhooks`),
    updateEndpoint: (businessId: string, endpointId: string, changes: EndpointChanges) =>
      request<EndpointRecord>('PATCH', `/businesses/${id(businessId)}/webhooks/${id(endpointId)}`, changes),
    deleteEndpoint: (businessId: string, endpointId: string) =>
      request<void>('DELETE', `/businesses/${id(businessId)}/webhooks/${id(endpointId)}`),
    testEndpoint: (businessId: string, endpointId: string) =>
      request<{ eventId: string }>('POST', `/businesses/${id(businessId)}/webhooks/${id(endpointId)}/test`),
    listDeliveries: (businessId: string, endpointId: string) =>
      request<{ data: DeliveryRecord[] }>('GET', `/businesses/${id(businessId)}/webhooks/${id(endpointId)}/deliveries`),
    resendDelivery: (businessId: string, endpointId: string, deliveryId: string) =>
      request<{ resent: true }>('POST', `/businesses/${id(businessId)}/webhooks/${id(endpointId)}/deliveries/${id(deliveryId)}/resend`),
  }
}

export type AdminClient = ReturnType<typeof createAdminClient>

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function toApiError(response: Response, parsed: unknown, text: string): AdminApiError {
  const error = envelopeOf(parsed)
  if (error) return new AdminApiError(response.status, error.code, error.message, error.requestId)
  // Not our envelope (a proxy, another server): show the start of what came back.
  const excerpt = text.trim().slice(0, 200) || response.statusText
  return new AdminApiError(response.status, `http_${response.status}`, excerpt, response.headers.get('x-request-id'))
}

/** `{"error": {"code", "message", "requestId"}}`, checked field by field. */
function envelopeOf(value: unknown): { code: string; message: string; requestId: string | null } | null {
  if (typeof value !== 'object' || value === null || !('error' in value)) return null
  const error = value.error
  if (typeof error !== 'object' || error === null || !('code' in error) || !('message' in error)) return null
  const { code, message } = error
  if (typeof code !== 'string' || typeof message !== 'string') return null
  const requestId = 'requestId' in error && typeof error.requestId === 'string' ? error.requestId : null
  return { code, message, requestId }
}
