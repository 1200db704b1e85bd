import { describe, expect, test } from 'bun:test'
import { SNIPPET_CACHE_CONTROL } from '../../src/sdk/index.ts'
import { call, testService } from '../support/service.ts'

// The size budget of the tracking snippet, minified and gzipped (contract section 15).
const SIZE_BUDGET = 5120

describe('GET /sdk/v0.js', () => {
  test('serves the minified snippet as JavaScript, without a key', async () => {
    const service = await testService()
    const response = await call(service, '/sdk/v0.js')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/javascript; charset=utf-8')
    const code = await response.text()
    expect(code).toStartWith('(()=>{')
    expect(code).toContain('/api/v0/analytics')
    expect(code).not.toMatch(/\bexport\s*{/)
  })

  test('stays under the size budget of 5 KB gzipped', async () => {
    const service = await testService()
    const bytes = Bun.gzipSync(new Uint8Array(await (await call(service, '/sdk/v0.js')).arrayBuffer())).byteLength
    expect(bytes).toBeGreaterThan(0)
    expect(bytes).toBeLessThan(SIZE_BUDGET)
  })

  test('is cached for an hour and revalidated by ETag, not marked immutable', async () => {
    const service = await testService()
    const response = await call(service, '/sdk/v0.js')
    expect(response.headers.get('cache-control')).toBe(SNIPPET_CACHE_CONTROL)
    expect(SNIPPET_CACHE_CONTROL).toContain('max-age=3600')
    expect(SNIPPET_CACHE_CONTROL).not.toContain('immutable')
    expect(response.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
  })

  test('answers 304 with no body when If-None-Match holds the current ETag', async () => {
    const service = await testService()
    const etag = (await call(service, '/sdk/v0.js')).headers.get('etag')!
    const response = await call(service, '/sdk/v0.js', { headers: { 'if-none-match': `"stale", ${etag}` } })
    expect(response.status).toBe(304)
    expect(await response.text()).toBe('')
    expect(response.headers.get('etag')).toBe(etag)
  })

  test('answers 200 again when If-None-Match holds another ETag', async () => {
    const service = await testService()
    const response = await call(service, '/sdk/v0.js', { headers: { 'if-none-match': '"an-older-build"' } })
    expect(response.status).toBe(200)
    expect((await response.text()).length).toBeGreaterThan(0)
  })

  test('lets any page load it, with or without the crossorigin attribute', async () => {
    const service = await testService()
    const response = await call(service, '/sdk/v0.js', { origin: 'https://shop.example.com' })
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
