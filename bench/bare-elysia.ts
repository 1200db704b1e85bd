import { Elysia } from 'elysia'
import { TrackBody } from '../src/areas/analytics/model.ts'

// The baseline of bench/whoami.ts: the same paths on a bare Elysia app, with no key chain,
// no CORS and no database, answering a JSON body of the same shape as the real whoami.
const answer = {
  businessId: '00000000-0000-4000-8000-000000000000',
  keyType: 'public',
  origin: 'https://www.example.com',
  allowedOrigins: ['example.com'],
}

// PEER=1: the same routes also read the TCP peer's address, as the service must for every
// public-key request (the per-visitor budget of contract section 8): the ceiling the key
// chain can reach, since Bun makes a getpeername system call for each requestIP.
const readPeer = process.env.PEER === '1'
let server: { requestIP(request: Request): { address: string } | null } | null = null
const peer = (request: Request): string | undefined => (readPeer ? server?.requestIP(request)?.address : undefined)

// The baseline of `BENCH_ROUTE=track`: the page-view route's own TypeBox body (validated by
// Elysia) answered 202 with the same shape, without a key chain or a database.
const app = new Elysia()
  .get('/api/v0/whoami', ({ request }) => (peer(request) === '' ? null : answer))
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
