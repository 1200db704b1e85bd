import { describe, expect, test } from 'bun:test'
import { brotliDecompressSync } from 'node:zlib'
import { SNIPPET_CACHE_CONTROL } from '../../src/http/sdk-route.ts'
import { call, testService } from '../support/service.ts'

// The files the service serves outside the API (the snippet, the reference page and its
// script) are compressed by Accept-Encoding, carry an ETag per coding and Vary, and answer
// 304 to a matching If-None-Match; HEAD gets the same headers and no body.

const BROWSER_ACCEPT = 'gzip, deflate, br, zstd'

async function scalarScriptPath(): Promise<string> {
  const html = await (await call(await testService(), '/docs')).text()
  return /<script src="([^"]+)"/.exec(html)![1]!
}

interface Asset {
  name: string
  path: () => Promise<string>
  contentType: string
  cacheControl: string
}

const ASSETS: Asset[] = [
  {
    name: 'the snippet /sdk/v0.js',
    path: async () => '/sdk/v0.js',
    contentType: 'application/javascript; charset=utf-8',
    cacheControl: SNIPPET_CACHE_CONTROL,
  },
  { name: 'the reference page /docs', path: async () => '/docs', contentType: 'text/html; charset=utf-8', cacheControl: 'no-cache' },
  {
    name: "the reference's script, by the versioned URL the page names",
    path: scalarScriptPath,
    contentType: 'application/javascript; charset=utf-8',
    cacheControl: 'public, max-age=31536000, immutable',
  },
]

async function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const response = await call(await testService(), path, { method, headers })
  return { response, body: new Uint8Array(await response.arrayBuffer()) }
}

describe.each(ASSETS)('$name', (asset) => {
  test('without Accept-Encoding: the bytes as they are, with ETag, Cache-Control and Vary', async () => {
    const { response, body } = await get(await asset.path())
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe(asset.contentType)
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(response.headers.get('cache-control')).toBe(asset.cacheControl)
    expect(response.headers.get('vary')).toBe('Accept-Encoding')
    expect(response.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    expect(body.byteLength).toBeGreaterThan(0)
  })

  test("a browser's Accept-Encoding gets brotli, smaller, that decodes to the same bytes", async () => {
    const path = await asset.path()
    const plain = await get(path)
    const { response, body } = await get(path, { 'accept-encoding': BROWSER_ACCEPT })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-encoding')).toBe('br')
    expect(response.headers.get('content-type')).toBe(asset.contentType)
    expect(response.headers.get('vary')).toBe('Accept-Encoding')
    expect(response.headers.get('cache-control')).toBe(asset.cacheControl)
    expect(response.headers.get('etag')).toBe(plain.response.headers.get('etag')!.replace(/"$/, '-br"'))
    expect(body.byteLength).toBeLessThan(plain.body.byteLength)
    expect(new Uint8Array(brotliDecompressSync(body))).toEqual(plain.body)
  })

  test('gzip alone gets gzip, with an ETag of its own', async () => {
    const path = await asset.path()
    const plain = await get(path)
    const { response, body } = await get(path, { 'accept-encoding': 'gzip' })
    expect(response.headers.get('content-encoding')).toBe('gzip')
    expect(response.headers.get('etag')).toBe(plain.response.headers.get('etag')!.replace(/"$/, '-gz"'))
    expect(Bun.gunzipSync(body)).toEqual(plain.body)
  })

  test('answers 304 with no body to the ETag of the coding it would send, strong or weak', async () => {
    const path = await asset.path()
    const etag = (await get(path, { 'accept-encoding': BROWSER_ACCEPT })).response.headers.get('etag')!
    for (const ifNoneMatch of [etag, `"older", W/${etag}`, '*']) {
      const { response, body } = await get(path, { 'accept-encoding': BROWSER_ACCEPT, 'if-none-match': ifNoneMatch })
      expect(response.status).toBe(304)
      expect(body.byteLength).toBe(0)
      expect(response.headers.get('etag')).toBe(etag)
      expect(response.headers.get('vary')).toBe('Accept-Encoding')
      expect(response.headers.get('cache-control')).toBe(asset.cacheControl)
    }
  })

  test("answers 200 in full when If-None-Match holds another coding's ETag or an older one", async () => {
    const path = await asset.path()
    const gzipEtag = (await get(path, { 'accept-encoding': 'gzip' })).response.headers.get('etag')!
    for (const ifNoneMatch of [gzipEtag, '"an-older-build"']) {
      const { response, body } = await get(path, { 'accept-encoding': 'br', 'if-none-match': ifNoneMatch })
      expect(response.status).toBe(200)
      expect(response.headers.get('content-encoding')).toBe('br')
      expect(body.byteLength).toBeGreaterThan(0)
    }
  })

  test('HEAD: the headers GET would send, with its length, and no body', async () => {
    const path = await asset.path()
    const full = await get(path, { 'accept-encoding': BROWSER_ACCEPT })
    const { response, body } = await get(path, { 'accept-encoding': BROWSER_ACCEPT }, 'HEAD')
    expect(response.status).toBe(200)
    expect(body.byteLength).toBe(0)
    expect(response.headers.get('content-length')).toBe(String(full.body.byteLength))
    for (const name of ['content-type', 'content-encoding', 'etag', 'vary', 'cache-control']) {
      expect(response.headers.get(name)).toBe(full.response.headers.get(name))
    }
  })
})

describe("the reference's script", () => {
  test('is named by the page with its content hash, and that URL alone is immutable', async () => {
    const path = await scalarScriptPath()
    expect(path).toMatch(/^\/docs\/scalar\.js\?v=[A-Za-z0-9_-]{22}$/)
    const versioned = await get(path)
    // The version is the identity ETag's hash: the URL changes exactly when the bytes do.
    expect(versioned.response.headers.get('etag')).toBe(`"${path.slice(path.indexOf('=') + 1)}"`)
    for (const other of ['/docs/scalar.js', '/docs/scalar.js?v=an-older-version']) {
      const { response, body } = await get(other)
      expect(response.status).toBe(200)
      expect(response.headers.get('cache-control')).toBe('public, max-age=3600')
      expect(body).toEqual(versioned.body)
    }
  })
})
