import { chromiumMissing } from '../support/chromium.ts'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { snippetAsset } from '../../src/http/sdk-route.ts'
import { seedBusiness, seedKey } from '../support/service.ts'
import { BROWSER_TEST_TIMEOUT, openPage, snippetPage, startHarness, type Harness } from './support.ts'

// What a visitor's browser downloads for the snippet: a page on a site's origin loads
// /sdk/v0.js from the API's origin, as docs/snippet.md says to paste it.

let harness: Harness

beforeAll(async () => {
  if (chromiumMissing) return
  harness = await startHarness()
}, 60_000)

afterAll(async () => {
  await harness?.close()
}, 60_000)

interface Timing {
  transferSize: number
  encodedBodySize: number
  decodedBodySize: number
}

describe.skipIf(chromiumMissing)('the snippet as Chromium downloads it', () => {
  test(
    'travels brotli-compressed, and the next page of the site takes it from the cache',
    async () => {
      const businessId = await seedBusiness(harness.service)
      const { key } = await seedKey(harness.service, businessId, { allowedOrigins: [harness.allowedEntry] })
      harness.setPage('/shop', snippetPage(harness, key))
      const page = await openPage(harness, `${harness.allowedOrigin}/shop`)
      const url = `${harness.apiOrigin}/sdk/v0.js`
      // Resource Timing, which Timing-Allow-Origin lets the page read for the API's origin.
      const timing = async (): Promise<Timing> => {
        const handle = await page.page.waitForFunction(
          (name) => {
            const entry = performance.getEntriesByName(name).at(-1) as PerformanceResourceTiming | undefined
            return entry && entry.responseEnd > 0
              ? { transferSize: entry.transferSize, encodedBodySize: entry.encodedBodySize, decodedBodySize: entry.decodedBodySize }
              : null
          },
          url,
          { timeout: 5000 },
        )
        return (await handle.jsonValue()) as Timing
      }
      try {
        const first = await timing()
        const [response] = await page.seen(url, 'Script')
        const brotli = (await snippetAsset.bytes('br')).byteLength
        const minified = (await snippetAsset.bytes('identity')).byteLength
        console.log(
          `  /sdk/v0.js in Chromium: ${first.transferSize} bytes transferred (${first.encodedBodySize} body) for ${first.decodedBodySize} bytes of script`,
        )
        expect(response?.headers['content-encoding']).toBe('br')
        expect(first.encodedBodySize).toBe(brotli)
        expect(first.decodedBodySize).toBe(minified)
        expect(first.transferSize).toBeGreaterThan(first.encodedBodySize)
        expect(first.transferSize).toBeLessThan(minified)

        await page.page.goto(`${harness.allowedOrigin}/shop`)
        const second = await timing()
        expect(second.decodedBodySize).toBe(minified)
        // Fresh for an hour: no byte of it travels again (0 means "from the browser's cache").
        expect(second.transferSize).toBe(0)
      } finally {
        await page.close()
      }
    },
    BROWSER_TEST_TIMEOUT,
  )
})
