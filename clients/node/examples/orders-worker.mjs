// An orders worker, as a backend runs one: it tells keygate who bought what, and on SIGTERM
// sends what is still queued before it exits.
//
//   npm run build -w @keygate/client     (once, in the repository)
//   KEYGATE_URL=http://localhost:3000 KEYGATE_KEY=sk_... node clients/node/examples/orders-worker.mjs
//
// The key: a private key with the scopes ANALYTICS_WRITE and AUDIENCE_PERSON_WRITE.
import { createClient } from '@keygate/client'

const keygate = createClient({
  baseUrl: process.env.KEYGATE_URL ?? 'http://localhost:3000',
  key: process.env.KEYGATE_KEY ?? '',
  // Events the service refused for good, or the queue had no room for: log them, or keep them.
  onError: (failure) =>
    console.error(`keygate: ${failure.events.length} event(s) dropped (${failure.reason}) ${failure.error?.message ?? ''}`),
})

// A deployment stops the process with SIGTERM: nothing tracked is lost if it calls shutdown().
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, async () => {
    await keygate.shutdown(10_000)
    process.exit(0)
  })
}

const me = await keygate.whoami()
if (!me.ok) {
  // Errors are values: a stable code, a message saying what to fix, the request id to quote.
  console.error(`keygate refused the key: ${me.error.code}: ${me.error.message} (request ${me.error.requestId})`)
  process.exit(1)
}
console.log(`business ${me.data.businessId}; budget ${me.rateLimit?.remaining} of ${me.rateLimit?.limit} requests left`)

const orders = [
  { id: 'ord_1001', email: 'ada@example.com', firstName: 'Ada', total: 42.5 },
  { id: 'ord_1002', email: 'grace@example.com', firstName: 'Grace', total: 17 },
  { id: 'ord_1003', email: 'ada@example.com', firstName: 'Ada', total: 8.25 },
]

for (const order of orders) {
  // A typed call: the body is checked against the API's own schema by the compiler (in TypeScript).
  const upserted = await keygate.upsertPeople({ email: order.email, firstName: order.firstName })
  if (!upserted.ok) console.error(`person ${order.email}: ${upserted.error.code}: ${upserted.error.message}`)
  // Queued, batched and retried until committed; its id and timestamp are set now.
  keygate.track({ eventType: 'order_paid', personId: order.email, properties: { orderId: order.id, total: order.total } })
}

// A batch job ends here; a long-running service would keep tracking until SIGTERM.
const stats = await keygate.shutdown()
console.log(`orders tracked: ${stats.committed} committed, ${stats.dropped} dropped`)
