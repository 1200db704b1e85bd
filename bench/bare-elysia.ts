import { Elysia } from 'elysia'

// The baseline of bench/whoami.ts: the same path on a bare Elysia app, with no key chain,
// no CORS and no database, answering a JSON body of the same shape as the real whoami.
const answer = {
  businessId: '00000000-0000-4000-8000-000000000000',
  keyType: 'public',
  origin: 'https://www.example.com',
  allowedOrigins: ['example.com'],
}

const app = new Elysia().get('/api/v0/whoami', () => answer).listen(Number(process.env.PORT ?? 3001))
console.log(`bare elysia listening on http://localhost:${app.server!.port}`)
