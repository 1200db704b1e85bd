import { describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { createLogger } from '../../src/observability/log.ts'
import { loopback } from '../support/loopback.ts'
import { seedBusiness, seedKey, testService } from '../support/service.ts'
import { waitUntil } from '../support/wait.ts'

// Clients that hang up before their body arrives (a slow-body flood, a phone losing its
// network) are not faults of the service: no 500 counted, and one log line a minute for
// all of them, not one a client.

/** Opens `count` connections that announce a body, send part of it and hang up. */
async function hangUpMidBody(port: number, path: string, key: string, count: number): Promise<void> {
  const sockets = await Promise.all(
    Array.from({ length: count }, () => {
      const socket = connect(port, '127.0.0.1')
      socket.on('error', () => {})
      return new Promise<typeof socket>((resolve) => socket.on('connect', () => resolve(socket)))
    }),
  )
  for (const socket of sockets) {
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\n` +
        'content-type: application/json\r\ncontent-length: 5000\r\n\r\n{"events":[',
    )
  }
  // Long enough for the service to start reading each body.
  await Bun.sleep(300)
  for (const socket of sockets) socket.destroy()
}

describe('clients that hang up mid-body', () => {
  test('50 clients write one log line, and none is counted as a 500', async () => {
    const lines: Record<string, unknown>[] = []
    const service = await testService({ logger: createLogger({ write: (line) => lines.push(JSON.parse(line)) }) })
    const { key } = await seedKey(service, await seedBusiness(service), { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    const { base, admin } = loopback(service)
    const port = Number(new URL(base).port)

    await hangUpMidBody(port, '/api/v0/analytics', key, 50)
    const gone = () => lines.filter((line) => line.msg === 'a client closed the connection before its body arrived')
    await waitUntil(() => gone().length > 0, 'the hang-ups logged', 10_000)
    // The other 49 arrive within the same minute and are left out.
    await Bun.sleep(500)
    expect(gone()).toHaveLength(1)
    expect(gone()[0]).toMatchObject({ level: 'warn', method: 'POST', route: '/api/v0/analytics' })
    expect(lines.filter((line) => line.level === 'error')).toEqual([])

    const metrics = await (await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer test-admin-token-0123456789' } })).text()
    expect(metrics).not.toMatch(/keygate_http_requests_total\{[^}]*status="500"/)
    // The service still answers a whole request.
    expect((await admin('/businesses')).status).toBe(200)
  })
})
