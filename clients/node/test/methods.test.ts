import { describe, expect, test } from 'bun:test'
import { routes } from '../src/api.ts'
import { createClient, KeygateError, type MethodName, operations } from '../src/index.ts'
import { answer, FakeClock, KEY, refusal, type SeenRequest, scriptedFetch } from './fakes.ts'

// The typed methods' requests and answers, against a fetch that records what it is sent.

function setup(respond: (request: SeenRequest) => Response | Error | 'hang' = () => answer(200, { ok: true })) {
  const clock = new FakeClock()
  const { fetch, requests } = scriptedFetch(clock, respond)
  const client = createClient({ key: KEY, baseUrl: 'http://keygate.test/', fetch, clock, timeoutMs: 5000 })
  return { clock, requests, client }
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())

describe('one method per operation', () => {
  test('each method sends its operation: method, path with encoded parameters, query, header parameters and JSON body', async () => {
    const { requests, client } = setup()
    for (const [name, route] of Object.entries(operations) as [MethodName, keyof typeof routes][]) {
      const shape = routes[route]
      const params: Record<string, string> = {}
      for (const p of shape.path) params[p] = `${p} a/b`
      for (const p of shape.query) params[p] = `${p}-value`
      for (const p of shape.header) params[camel(p)] = `${p}-value`
      const args: unknown[] = []
      if (shape.path.length + shape.query.length + shape.header.length > 0) args.push(params)
      if (shape.body !== 'none') args.push({ probe: name })
      const method = client[name] as (...args: unknown[]) => Promise<unknown>
      await method(...args)
      const request = requests.at(-1)!
      const [verb, path] = route.split(' ') as [string, string]
      expect(request.method).toBe(verb)
      expect(request.url.pathname).toBe(path.replace(/\{([^}]+)\}/g, (_, p: string) => encodeURIComponent(`${p} a/b`)))
      expect(Object.fromEntries(request.url.searchParams)).toEqual(Object.fromEntries(shape.query.map((p) => [p, `${p}-value`])))
      for (const p of shape.header) expect(request.headers.get(p)).toBe(`${p}-value`)
      expect(request.body).toBe(shape.body === 'none' ? undefined : JSON.stringify({ probe: name }))
      expect(request.headers.get('authorization')).toBe(`Bearer ${KEY}`)
    }
    expect(requests).toHaveLength(Object.keys(routes).length)
  })

  test('query parameters left out, or undefined, are not sent', async () => {
    const { requests, client } = setup()
    await client.listPeople({ limit: 10, email: undefined })
    await client.listPeople()
    expect(requests.map((r) => r.url.search)).toEqual(['?limit=10', ''])
  })

  test('options add headers and a signal to one call', async () => {
    const { requests, client } = setup()
    await client.whoami({ headers: { origin: 'https://shop.example.com' } })
    expect(requests[0]!.headers.get('origin')).toBe('https://shop.example.com')
  })
})

describe('answers', () => {
  test('a success carries the data, status, request id and the RateLimit-* figures', async () => {
    const { client } = setup(() =>
      answer(
        200,
        { businessId: 'b1', keyType: 'private' },
        { 'ratelimit-limit': '6000', 'ratelimit-remaining': '5999', 'ratelimit-reset': '1' },
      ),
    )
    const result = await client.whoami()
    expect(result).toMatchObject({ ok: true, status: 200, requestId: 'req_200', data: { businessId: 'b1', keyType: 'private' } })
    expect(result.rateLimit).toEqual({ limit: 6000, remaining: 5999, reset: 1 })
  })

  test('204 has no data', async () => {
    const { client } = setup(() => new Response(null, { status: 204, headers: { 'x-request-id': 'req_1' } }))
    const result = await client.deletePerson({ id: '0190f1e2-7a3b-7c4d-8e5f-a0b1c2d3e4f5' })
    expect(result).toMatchObject({ ok: true, status: 204, data: undefined })
  })

  test('a refusal is a KeygateError value with the code, message, status, request id and Retry-After', async () => {
    const { client } = setup(() =>
      refusal(429, 'rate_limited', 'Over the budget.', {
        'retry-after': '3',
        'ratelimit-limit': '10',
        'ratelimit-remaining': '0',
        'ratelimit-reset': '9',
      }),
    )
    const result = await client.whoami()
    expect(result.ok).toBe(false)
    expect(result.error).toBeInstanceOf(KeygateError)
    expect(result.error).toMatchObject({
      code: 'rate_limited',
      message: 'Over the budget.',
      status: 429,
      requestId: 'req_429',
      retryAfter: 3,
      retryable: true,
    })
    expect(result.rateLimit).toEqual({ limit: 10, remaining: 0, reset: 9 })
  })

  test('an answer that is not the service envelope is unexpected_response, keeping its status', async () => {
    const { client } = setup(() => new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }))
    const result = await client.whoami()
    expect(result.error).toMatchObject({ code: 'unexpected_response', status: 502, requestId: null, retryable: true })
    expect(result.error?.message).toContain('HTTP 502')
  })

  test('no answer: network_error, timeout, or aborted by the caller, with status 0', async () => {
    const refused = await setup(() => new TypeError('connect ECONNREFUSED 127.0.0.1:1')).client.whoami()
    expect(refused.error).toMatchObject({ code: 'network_error', status: 0, retryable: true })
    expect(refused.error?.message).toContain('ECONNREFUSED')

    const { clock, client } = setup(() => 'hang')
    const waiting = client.whoami()
    await clock.advance(5000)
    expect((await waiting).error).toMatchObject({ code: 'timeout', status: 0, retryable: true })

    const controller = new AbortController()
    const cancelled = client.whoami({ signal: controller.signal })
    controller.abort()
    expect((await cancelled).error).toMatchObject({ code: 'aborted', status: 0, retryable: false })
  })
})

describe('construction', () => {
  test('a key that is not a keygate key is refused at once, saying what one looks like', () => {
    expect(() => createClient({ key: 'sk_short', baseUrl: 'http://keygate.test' })).toThrow(
      /"sk_" \(private\) or "pk_" \(public\) followed by 20 to 40/,
    )
    expect(() => createClient({ key: KEY, baseUrl: 'not a url' })).toThrow(TypeError)
  })
})
