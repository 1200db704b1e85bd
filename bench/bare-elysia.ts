import { drizzle } from 'drizzle-orm/postgres-js'
import { Elysia } from 'elysia'
import postgres from 'postgres'
import type { Db } from '../db/client.ts'
import { TrackBody } from '../src/areas/analytics/model.ts'
import { eventInserter } from '../src/events/write.ts'
import { POSTGRES_INSERTS_IN_FLIGHT } from '../src/config.ts'
import { createFloorCommit } from './floor-commit.ts'
import { createFloorRoutes, WHOAMI_ANSWER } from './floor-routes.ts'

// The baseline of bench/whoami.ts: the same paths on a bare Elysia app, with no key chain,
// no CORS and no database, answering a JSON body of the same shape as the real whoami.

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
const floorMode = process.env.FLOOR === '1' || process.env.FLOOR_AT_TURN_END === '1' || process.env.FLOOR_DATABASE_URL !== undefined
let server: { requestIP(request: Request): { address: string } | null } | null = null
const peerAddress = (request: Request): string | undefined => server?.requestIP(request)?.address

// FLOOR_DATABASE_URL (with FLOOR_BUSINESS and FLOOR_KEY, the ids its rows carry): the page
// view answers after its rows are committed there, by the service's own insert statement
// on a plain postgres.js pool of as many connections as the service writes on: the single
// events' floor of bench/ingest.ts.
const floorDatabase = process.env.FLOOR_DATABASE_URL
const commit = floorDatabase
  ? {
      write: createFloorCommit(
        eventInserter(drizzle(postgres(floorDatabase, { max: POSTGRES_INSERTS_IN_FLIGHT, onnotice: () => {} })) as unknown as Db),
        POSTGRES_INSERTS_IN_FLIGHT,
      ),
      key: { businessId: process.env.FLOOR_BUSINESS!, id: process.env.FLOOR_KEY! },
    }
  : undefined

const routes = createFloorRoutes(peerAddress, { atTurnEnd: process.env.FLOOR_AT_TURN_END === '1', commit })
const app = new Elysia(floorMode ? { serve: { routes } } : {})
  // bench/ingest.ts sends these once a run's POSTs are all sent, as it does to the service.
  .get('/healthz', () => ({ status: 'ok' }))
  .get('/api/v0/whoami', () => WHOAMI_ANSWER)
  .post('/api/v0/analytics', ({ body, status }) => status(202, { accepted: 'events' in body ? body.events.length : 1 }), {
    body: TrackBody.schema,
  })
  .listen(Number(process.env.PORT ?? 3001))
server = app.server
console.log(`bare elysia listening on http://localhost:${app.server!.port}`)
