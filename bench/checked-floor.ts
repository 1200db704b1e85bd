import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { Static } from 'elysia'
import { hashKey, readBearer } from '../src/access/key-format.ts'
import { EARLIEST_TIMESTAMP, MAX_FUTURE_MS, TrackBody, type TrackedEvent } from '../src/areas/analytics/model.ts'
import { toEventRow } from '../src/areas/analytics/service.ts'
import { parseJsonBody } from '../src/http/json-body.ts'
import { JSON_CONTENT_TYPE, MAX_BODY_BYTES } from '../src/http/request-body.ts'
import { apiSuccessHeaders } from '../src/http/request-context.ts'
import { createTurnEnd } from '../src/http/turn-end.ts'
import { parseIsoTime } from '../src/shared/time.ts'
import { assertStorableJson } from '../src/shared/validation.ts'

/** The one key the checked floor knows: what the service's key cache would hold for it. */
export interface CheckedKey {
  /** The key as sent in `Authorization: Bearer …`; only its SHA-256 is kept. */
  plain: string
  type: 'public' | 'private'
  id: string
  businessId: string
  /** Its one allowed origin entry, a domain (`example.com`: the domain and its subdomains, over https). */
  domain: string
  scopes: readonly string[]
  /** Requests a second, per visitor. */
  limit: number
}

interface KnownKey {
  type: 'public' | 'private'
  id: string
  businessId: string
  revoked: boolean
  expiresAt: number | null
  exactOrigin: string
  subdomainSuffix: string
  scopes: Set<string>
  interval: number
  windowMs: number
  lastUsedAt: number
  accepted: number
}

const trackBody = TypeCompiler.Compile(TrackBody.schema)
/** The service's duration buckets are of this length; only the loop's cost matters here. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * The contract's per-request checks on top of the native floor (bench/floor-routes.ts),
 * written as leanly as one function can, with no structure: the measure of what any
 * implementation that checks a granted public-key request in JavaScript must pay. It does
 * what the service's gate and hot routes do for a granted request and nothing else:
 *
 * - the bearer's format and the key's SHA-256 (the service's own readBearer and hashKey),
 *   its lookup, revoked and expiry checks;
 * - a public key's Origin against its allowed domain, the route's scope;
 * - the budget (GCRA): a public key's per visitor (one cell per key and peer address), a
 *   private key's its own (the allowed IPs of section 14 are left out: the bench's keys
 *   have none);
 * - the use counted (a counter per key, lastUsedAt kept to the minute), the answer's
 *   status and duration counted (the metrics), a request id;
 * - page views: the body's Content-Length and Content-Type, the service's own screen of
 *   the text (src/http/json-body.ts: depth, JSON, storable strings, finite numbers), the
 *   strict schema, the event's row with its UUIDv7, and one wait for the end of the turn
 *   (where the service's group commit hands its no-op store the turn's rows).
 *
 * Only the granted path is lean; a refusal answers a bare status (never measured).
 */
export function createCheckedFloorRoutes(peer: (request: Request) => string | undefined, config: CheckedKey) {
  const keys = new Map<string, KnownKey>()
  keys.set(hashKey(config.plain), {
    type: config.type,
    id: config.id,
    businessId: config.businessId,
    revoked: false,
    expiresAt: null,
    exactOrigin: `https://${config.domain}`,
    subdomainSuffix: `.${config.domain}`,
    scopes: new Set(config.scopes),
    interval: 1000 / config.limit,
    windowMs: 1000,
    lastUsedAt: 0,
    accepted: 0,
  })
  const visitors = new Map<string, { tat: number }>()
  const statuses = new Float64Array(500)
  const durations = new Float64Array(BUCKETS.length + 1)
  const atTurnEnd = createTurnEnd()
  let counter = 0
  // lastUsedAt to write (the service writes its queue every second; one key here).
  const lastUsedQueue = new Map<string, number>()
  // The receive time as ISO text, made once per millisecond (as the service does).
  let receivedMs = Number.NaN
  let received = ''

  /** The key and budget checks: the granted key, or the status of the refusal. */
  function admit(request: Request, origin: string | null, scope: string | null): KnownKey | number {
    const bearer = readBearer(request.headers.get('authorization'))
    if (!bearer.ok) return 401
    const key = keys.get(hashKey(bearer.key))
    if (key === undefined || key.revoked) return 401
    if (key.expiresAt !== null && Date.now() >= key.expiresAt) return 401
    // A public key's Origin against its list; a private key's budget is the key's own.
    const isPublic = key.type === 'public'
    const allowed =
      !isPublic ||
      (origin !== null && (origin === key.exactOrigin || (origin.startsWith('https://') && origin.endsWith(key.subdomainSuffix))))
    if (!allowed) return 403
    if (scope !== null && !key.scopes.has(scope)) return 403
    const now = performance.now()
    const bucket = isPublic ? `${key.id} ${peer(request)}` : key.id
    let cell = visitors.get(bucket)
    if (cell === undefined) visitors.set(bucket, (cell = { tat: 0 }))
    const next = Math.max(cell.tat, now) + key.interval
    if (next - now > key.windowMs) return 429
    cell.tat = next
    return key
  }

  function answer(key: KnownKey, origin: string | null, status: number, json: string, startedAt: number): Response {
    const response = new Response(json, { status, headers: apiSuccessHeaders(origin) })
    response.headers.set('x-request-id', `req_${(counter++).toString(36)}`)
    const at = Date.now()
    key.accepted++
    if (at - key.lastUsedAt > 60_000) {
      key.lastUsedAt = at
      lastUsedQueue.set(key.id, at)
    }
    statuses[status - 100]!++
    const seconds = (performance.now() - startedAt) / 1000
    let bucket = 0
    while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]!) bucket++
    durations[bucket]!++
    return response
  }

  const whoamiAnswers = new Map<string | null, string>()
  function whoamiJson(key: KnownKey, origin: string | null): string {
    let json = whoamiAnswers.get(origin)
    if (json === undefined) {
      json = JSON.stringify({ businessId: key.businessId, keyType: key.type, origin, keyId: key.id })
      whoamiAnswers.set(origin, json)
    }
    return json
  }

  return {
    '/api/v0/whoami': {
      GET: async (request: Request) => {
        const startedAt = performance.now()
        const origin = request.headers.get('origin')
        const key = admit(request, origin, null)
        if (typeof key === 'number') return new Response(null, { status: key })
        await atTurnEnd(null)
        return answer(key, origin, 200, whoamiJson(key, origin), startedAt)
      },
    },
    '/api/v0/analytics': {
      POST: async (request: Request) => {
        const startedAt = performance.now()
        const origin = request.headers.get('origin')
        const key = admit(request, origin, 'ANALYTICS_WRITE')
        if (typeof key === 'number') return new Response(null, { status: key })
        // The bench always sends a Content-Length; a chunked body is refused, not read.
        const length = request.headers.get('content-length')
        if (length === null) return new Response(null, { status: 411 })
        if (Number(length) > MAX_BODY_BYTES) return new Response(null, { status: 413 })
        if (!JSON_CONTENT_TYPE.test(request.headers.get('content-type') ?? '')) return new Response(null, { status: 415 })
        let body: unknown
        try {
          body = parseJsonBody(await request.text())
        } catch {
          return new Response(null, { status: 400 })
        }
        if (!trackBody.Check(body)) return new Response(null, { status: 400 })
        const receivedAt = Date.now()
        if (receivedAt !== receivedMs) received = new Date((receivedMs = receivedAt)).toISOString()
        const events: Static<typeof TrackedEvent>[] = 'events' in body ? body.events : [body]
        const rows = []
        for (const event of events) {
          let occurred = received
          if (event.timestamp !== undefined) {
            const time = parseIsoTime(event.timestamp)?.getTime() ?? Number.NaN
            if (!(time >= EARLIEST_TIMESTAMP && time <= receivedAt + MAX_FUTURE_MS)) return new Response(null, { status: 400 })
            occurred = new Date(time).toISOString()
          }
          if (event.properties !== undefined) {
            try {
              assertStorableJson(event.properties, 'properties')
            } catch {
              return new Response(null, { status: 400 })
            }
          }
          rows.push(toEventRow(event, key, origin, occurred, received))
        }
        await atTurnEnd(rows)
        return answer(key, origin, 202, `{"accepted":${rows.length}}`, startedAt)
      },
    },
  }
}
