import { expect, test } from 'bun:test'
import { createRequestContext } from '../../src/http/request-context.ts'

// Each app makes its own request context (src/app.ts): the ids of two apps in one process
// (two instances behind one load balancer, as tests start them) never collide.

test('two apps in one process never hand out the same request id, and each id is new', () => {
  const first = createRequestContext()
  const second = createRequestContext()
  const ids = new Set<string>()
  for (let i = 0; i < 1_000; i++) {
    ids.add(first.nextRequestId())
    ids.add(second.nextRequestId())
  }
  expect(ids.size).toBe(2_000)
  for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{8}[0-9a-z]+$/)
})

test("an app's success headers echo the Origin; another app's template is its own object", () => {
  const first = createRequestContext()
  const second = createRequestContext()
  const headers = first.apiSuccessHeaders('https://shop.example')
  expect(headers.get('access-control-allow-origin')).toBe('https://shop.example')
  expect(headers.get('vary')).toBe('Origin')
  expect(first.apiSuccessHeaders('https://shop.example')).toBe(headers)
  expect(second.apiSuccessHeaders('https://shop.example')).not.toBe(headers)
  expect(first.apiSuccessHeaders(null).has('access-control-allow-origin')).toBe(false)
})
