import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Elysia } from 'elysia'
import { TrackBody } from '../src/areas/analytics/model.ts'
import { apiSuccessHeaders } from '../src/http/request-context.ts'

// The baseline of bench/whoami.ts: the same paths on a bare Elysia app, with no key chain,
// no CORS and no database, answering a JSON body of the same shape as the real whoami.
const answer = {
  businessId: '00000000-0000-4000-8000-000000000000',
  keyType: 'public',
  origin: 'https://www.example.com',
  allowedOrigins: ['example.com'],
}

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
// is its own code. Served as the service serves its hot routes, by Bun's router (the
// app's `serve.routes`), so Elysia's per-request work is not counted against it.
const mode = process.env.FLOOR === '1' ? 'floor' : process.env.PEER === '1' ? 'peer' : 'bare'
let server: { requestIP(request: Request): { address: string } | null } | null = null
const peer = (request: Request): string | undefined => (mode === 'bare' ? undefined : server?.requestIP(request)?.address)

const trackBody = TypeCompiler.Compile(TrackBody.schema)
let counter = 0
function floorAnswer(request: Request, status: number, json: string): Response {
  const address = server?.requestIP(request)?.address
  const origin = request.headers.get('origin')
  const authorization = request.headers.get('authorization') ?? ''
  if (address === '' || Bun.SHA256.hash(authorization.slice(7), 'hex') === '') return new Response(null, { status: 500 })
  const response = new Response(json, { status, headers: apiSuccessHeaders(origin) })
  response.headers.set('x-request-id', `req_${(counter++).toString(36)}`)
  return response
}

// The baseline of `BENCH_ROUTE=track`: the page-view route's own TypeBox body (validated by
// Elysia) answered 202 with the same shape, without a key chain or a database.
const floorRoutes = {
  '/api/v0/whoami': { GET: (request: Request) => floorAnswer(request, 200, JSON.stringify(answer)) },
  '/api/v0/analytics': {
    POST: async (request: Request) => {
      const body: unknown = JSON.parse(await request.text())
      if (!trackBody.Check(body)) return new Response(null, { status: 400 })
      return floorAnswer(request, 202, JSON.stringify({ accepted: 'events' in body ? body.events.length : 1 }))
    },
  },
}

const app = new Elysia(mode === 'floor' ? { serve: { routes: floorRoutes } } : {})
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
