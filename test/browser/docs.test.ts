import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import type { Service } from '../../src/app.ts'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { testService } from '../support/service.ts'

/** The reference page in a real headless Chromium: it renders the document, offline. */

let service: Service
let browser: Browser
let origin: string

beforeAll(async () => {
  if (chromiumMissing) return
  service = await testService()
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  origin = `http://localhost:${service.app.server!.port}`
  browser = await launchChromium(30_000)
})

afterAll(async () => {
  await browser?.close().catch(() => {})
  await service?.app.stop(true)
  await service?.drain()
})

describe.skipIf(chromiumMissing)('GET /docs in a browser', () => {
  test('shows the operations of the document and asks nothing of any other host', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const elsewhere: string[] = []
    await context.route('**/*', (route) => {
      const url = route.request().url()
      if (url.startsWith(`${origin}/`)) return route.continue()
      elsewhere.push(url)
      return route.abort()
    })
    const page = await context.newPage()
    const script = page.waitForResponse((response) => new URL(response.url()).pathname === '/docs/scalar.js')
    await page.goto(`${origin}/docs`)
    // The 4 MB bundle travels compressed, under a URL that may be cached for good.
    const scriptHeaders = (await script).headers()
    expect(scriptHeaders['content-encoding']).toBe('br')
    expect(scriptHeaders['cache-control']).toContain('immutable')
    await page.getByText('The client context of the calling key').first().waitFor({ timeout: 20_000 })
    await page.getByText('Keygate engagement API').first().waitFor()
    await page.getByText('The client context of the calling key').first().click()
    // Its answers list the codes derived for it: a public route with no scope.
    await page.getByText('origin_not_allowed').first().waitFor()
    expect(await page.getByText('insufficient_scope').count()).toBe(0)
    await page.screenshot({ path: join(mkdtempSync(join(tmpdir(), 'keygate-docs-')), 'docs.png') })
    expect(elsewhere).toEqual([])
    await context.close()
  }, 60_000)
})
