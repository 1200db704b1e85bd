import { describe, expect, test } from 'bun:test'
import { chooseCoding, staticAsset, type Coding } from '../../src/http/static-asset.ts'

describe('chooseCoding: Accept-Encoding to the coding sent', () => {
  const cases: [string | null, Coding][] = [
    [null, 'identity'],
    ['', 'identity'],
    ['gzip, deflate, br, zstd', 'br'],
    ['gzip, deflate', 'gzip'],
    ['x-gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=0.5, br;q=0.8', 'br'],
    ['gzip;q=0.9, br;q=0.8', 'gzip'],
    ['br;q=0.2, identity', 'identity'],
    ['identity', 'identity'],
    ['deflate, zstd', 'identity'],
    ['*', 'br'],
    ['*;q=0.5, gzip', 'gzip'],
    ['*;q=0', 'identity'],
    ['gzip;q=0, br;q=0', 'identity'],
    ['gzip;q=nonsense', 'identity'],
    [' br ; q = 1 ', 'br'],
  ]
  test.each(cases)('%p -> %p', (header, coding) => {
    expect(chooseCoding(header)).toBe(coding)
  })
})

describe('staticAsset', () => {
  test('loads its content once, on the first request, and compresses each coding once', async () => {
    let loads = 0
    const asset = staticAsset(
      () => {
        loads++
        return 'console.log("hello")\n'.repeat(50)
      },
      { contentType: 'application/javascript', cacheControl: 'no-cache' },
    )
    expect(loads).toBe(0)
    const request = (acceptEncoding: string) => new Request('http://localhost/a.js', { headers: { 'accept-encoding': acceptEncoding } })
    const first = await asset.serve(request('br'))
    const second = await asset.serve(request('br'))
    await asset.serve(request('gzip'))
    expect(loads).toBe(1)
    expect(await first.arrayBuffer()).toEqual(await second.arrayBuffer())
  })

  test('a load that failed is tried again by the next request', async () => {
    let attempts = 0
    const asset = staticAsset(
      async () => {
        if (++attempts === 1) throw new Error('not yet')
        return 'body'
      },
      { contentType: 'text/plain', cacheControl: 'no-cache' },
    )
    const request = new Request('http://localhost/a.txt')
    await expect(asset.serve(request)).rejects.toThrow('not yet')
    expect(await (await asset.serve(request)).text()).toBe('body')
  })
})
