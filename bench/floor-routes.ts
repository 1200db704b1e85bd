import { TypeCompiler } from '@sinclair/typebox/compiler'
import { TrackBody } from '../src/areas/analytics/model.ts'
import type { EventRow } from '../src/events/write.ts'
import { createRequestContext } from '../src/http/request-context.ts'
import { createTurnEnd } from '../src/http/turn-end.ts'
import { floorRow } from './floor-commit.ts'

const { apiSuccessHeaders } = createRequestContext()

/** The body of the bare and floor whoami routes: the real whoami's shape. */
export const WHOAMI_ANSWER = {
  businessId: '00000000-0000-4000-8000-000000000000',
  keyType: 'public',
  origin: 'https://www.example.com',
  allowedOrigins: ['example.com'],
}

const trackBody = TypeCompiler.Compile(TrackBody.schema)

/**
 * The contract's native floor for a granted public-key request (bench/bare-elysia.ts,
 * FLOOR=1): the peer's address, the Authorization and Origin headers, the key's SHA-256,
 * the CORS headers and a request id; the page view also reads and checks its body. No key
 * check, no budget, no counter. `peer` reads the TCP peer (Bun's `server.requestIP`).
 *
 * `atTurnEnd` (FLOOR_AT_TURN_END=1): the same work, answered at the end of the event loop's
 * turn, all of the turn's answers together, as the service's direct routes answer
 * (src/http/turn-end.ts). In Bun that form is the cheaper one under load, so it is the
 * higher ceiling (bench/README.md, "Writes gathered per turn" and "whoami answered at the
 * turn's end").
 *
 * `commit` (FLOOR_DATABASE_URL): the page view answers only after its rows are committed,
 * through bench/floor-commit.ts, as rows of one business and key (the floor looks no key
 * up): the single events' floor of bench/ingest.ts.
 */
export function createFloorRoutes(
  peer: (request: Request) => string | undefined,
  options: { atTurnEnd?: boolean; commit?: { write(rows: EventRow[]): Promise<void>; key: { businessId: string; id: string } } } = {},
) {
  const commit = options.commit
  const atTurnEnd = options.atTurnEnd ? createTurnEnd() : null
  let counter = 0
  function floorAnswer(request: Request, status: number, json: string): Response {
    const address = peer(request)
    const origin = request.headers.get('origin')
    const authorization = request.headers.get('authorization') ?? ''
    if (address === '' || Bun.SHA256.hash(authorization.slice(7), 'hex') === '') return new Response(null, { status: 500 })
    const response = new Response(json, { status, headers: apiSuccessHeaders(origin) })
    response.headers.set('x-request-id', `req_${(counter++).toString(36)}`)
    return response
  }
  return {
    '/api/v0/whoami': {
      GET:
        atTurnEnd === null
          ? (request: Request) => floorAnswer(request, 200, JSON.stringify(WHOAMI_ANSWER))
          : async (request: Request) => {
              await atTurnEnd()
              return floorAnswer(request, 200, JSON.stringify(WHOAMI_ANSWER))
            },
    },
    '/api/v0/analytics': {
      POST: async (request: Request) => {
        const body: unknown = JSON.parse(await request.text())
        if (!trackBody.Check(body)) return new Response(null, { status: 400 })
        if (commit !== undefined) {
          const origin = request.headers.get('origin')
          const events = 'events' in body ? body.events : [body]
          await commit.write(events.map((event) => floorRow(event, commit.key, origin)))
        } else if (atTurnEnd !== null) await atTurnEnd()
        return floorAnswer(request, 202, JSON.stringify({ accepted: 'events' in body ? body.events.length : 1 }))
      },
    },
  }
}
