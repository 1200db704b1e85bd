import { Elysia } from 'elysia'
import { TrackBody } from '../src/areas/analytics/model.ts'
import { createFloorRoutes, WHOAMI_ANSWER } from './floor-routes.ts'

// The baseline of bench/whoami.ts: the same paths on a bare Elysia app, with no key chain,
// no CORS and no database, answering a JSON body of the same shape as the real whoami.

// PEER=1: the same routes also read the TCP peer's address, as the service must for every
// public-key request (the per-visitor budget of contract section 8), since Bun makes a
// getpeername system call for each requestIP.
// FLOOR=1: the same routes do what any implementation of the contract must do natively
// for a granted public-key request, and nothing else: read the peer's address, read the
// Authorization and Origin headers (Bun builds the request's Headers on the first read),
// hash the key (keys are looked up by their SHA-256, never kept in plain text), and answer
// with the CORS headers and an X-Request-Id (contract sections 3 and 13), copying the
// service's own Headers template (src/http/request-context.ts); the page view also reads
// and checks its body. No key check, no budget, no counter: what the service adds to this
// is its own code. FLOOR_AT_TURN_END=1: the floor answering at the end of the event loop's
// turn (bench/floor-routes.ts). Served as the service serves its hot routes, by Bun's
// router (the app's `serve.routes`), so Elysia's per-request work is not counted against it.
const mode = process.env.FLOOR === '1' || process.env.FLOOR_AT_TURN_END === '1' ? 'floor' : process.env.PEER === '1' ? 'peer' : 'bare'
let server: { requestIP(request: Request): { address: string } | null } | null = null
const peerAddress = (request: Request): string | undefined => server?.requestIP(request)?.address
const peer = mode === 'bare' ? () => undefined : peerAddress

// The floor's routes (bench/floor-routes.ts), which bench/handler-cost.ts also calls in process.
const floorRoutes = createFloorRoutes(peerAddress, {
  atTurnEnd: process.env.FLOOR_AT_TURN_END === '1',
})

const app = new Elysia(mode === 'floor' ? { serve: { routes: floorRoutes } } : {})
  .get('/api/v0/whoami', ({ request }) => (peer(request) === '' ? null : WHOAMI_ANSWER))
  .post(
    '/api/v0/analytics',
    ({ body, status, request }) => status(202, { accepted: peer(request) === '' ? 0 : 'events' in body ? body.events.length : 1 }),
    {
      body: TrackBody.schema,
    },
  )
  .listen(Number(process.env.PORT ?? 3001))
server = app.server
console.log(`bare elysia listening on http://localhost:${app.server!.port}`)
