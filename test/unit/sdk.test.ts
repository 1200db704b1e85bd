import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { SNIPPET_CACHE_CONTROL } from '../../src/http/sdk-route.ts'
import { call, testService } from '../support/service.ts'

// The size budget of the tracking snippet, minified and gzipped (docs/snippet.md).
const SIZE_BUDGET = 5120

/** The snippet's bytes as served with each Accept-Encoding: what a browser downloads. */
async function servedSizes() {
  const service = await testService()
  const size = async (acceptEncoding?: string) => {
    const response = await call(service, '/sdk/v0.js', { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} })
    return (await response.arrayBuffer()).byteLength
  }
  return { minified: await size(), gzip: await size('gzip'), brotli: await size('br') }
}

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

  test('stays under the size budget of 5 KB gzipped, and brotli is smaller still', async () => {
    const sizes = await servedSizes()
    console.log(`  /sdk/v0.js: ${sizes.minified} bytes minified, ${sizes.gzip} gzip, ${sizes.brotli} brotli`)
    expect(sizes.gzip).toBeLessThan(SIZE_BUDGET)
    expect(sizes.gzip).toBeLessThan(sizes.minified)
    expect(sizes.brotli).toBeLessThan(sizes.gzip)
  })

  test('docs/snippet.md states the sizes this test measures (within 5%)', async () => {
    const doc = await Bun.file(join(import.meta.dir, '../../docs/snippet.md')).text()
    const stated = /(\d[\d,]*) bytes minified, (\d[\d,]*) with gzip and (\d[\d,]*) with brotli/.exec(doc)
    expect(stated).not.toBeNull()
    const [minified, gzip, brotli] = stated!.slice(1).map((figure) => Number(figure.replaceAll(',', '')))
    const sizes = await servedSizes()
    for (const [measured, written] of [
      [sizes.minified, minified!],
      [sizes.gzip, gzip!],
      [sizes.brotli, brotli!],
    ]) {
      expect(Math.abs(measured! - written!) / measured!).toBeLessThanOrEqual(0.05)
    }
  })

  test('is cached for an hour and revalidated by ETag, not marked immutable', async () => {
    const service = await testService()
    const response = await call(service, '/sdk/v0.js')
    expect(response.headers.get('cache-control')).toBe(SNIPPET_CACHE_CONTROL)
    expect(SNIPPET_CACHE_CONTROL).toContain('max-age=3600')
    expect(SNIPPET_CACHE_CONTROL).not.toContain('immutable')
    expect(response.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
  })

  test('lets any page load it, with or without the crossorigin attribute', async () => {
    const service = await testService()
    const response = await call(service, '/sdk/v0.js', { origin: 'https://shop.example.com' })
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
