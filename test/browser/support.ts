import type { Browser, BrowserContext, Page } from 'playwright-core'
import type { Service } from '../../src/app.ts'
import { launchChromium } from '../support/chromium.ts'
import { testService } from '../support/service.ts'

/**
 * Plumbing of the real-browser tests: the API on a real loopback socket, test pages served
 * from two other ports (one origin the key allows, one it does not, as on a real site), and
 * Debian's headless Chromium driven by playwright-core.
 */

export interface Harness {
  service: Service
  browser: Browser
  /** `http://localhost:<port>` of the API (which also serves /sdk/v0.js). */
  apiOrigin: string
  /** The page origin the tests' keys allow, and the allowed-origin entry that allows it. */
  allowedOrigin: string
  allowedEntry: string
  /** The same pages from a port no key allows. */
  refusedOrigin: string
  /** Serves `html` at `path` from both page origins. */
  setPage(path: string, html: string): void
  /** Moves the API's clock (key expiry) by `ms`; reset with `resetClock()`. */
  advanceClock(ms: number): void
  resetClock(): void
  close(): Promise<void>
}

export async function startHarness(): Promise<Harness> {
  let clockOffset = 0
  const service = await testService({ now: () => Date.now() + clockOffset })
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  const apiOrigin = `http://localhost:${service.app.server!.port}`

  const pages = new Map<string, string>()
  const servePage = (request: Request) => {
    const html = pages.get(new URL(request.url).pathname)
    return html === undefined
      ? new Response('no such test page', { status: 404 })
      : new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
  }
  const allowedPages = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: servePage })
  const refusedPages = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: servePage })

  let browser: Browser
  try {
    browser = await launchChromium()
  } catch (error) {
    await Promise.all([allowedPages.stop(true), refusedPages.stop(true), service.app.stop(true)])
    throw error
  }

  return {
    service,
    browser,
    apiOrigin,
    allowedOrigin: `http://localhost:${allowedPages.port}`,
    allowedEntry: `localhost:${allowedPages.port}`,
    refusedOrigin: `http://localhost:${refusedPages.port}`,
    setPage: (path, html) => void pages.set(path, html),
    advanceClock: (ms) => void (clockOffset += ms),
    resetClock: () => void (clockOffset = 0),
    async close() {
      await browser.close().catch(() => {})
      await Promise.all([allowedPages.stop(true), refusedPages.stop(true), service.app.stop(true)])
      await service.drain()
    },
  }
}

/** An HTTP exchange as Chromium's network stack saw it (Chrome DevTools Protocol). */
export interface SeenResponse {
  url: string
  method: string
  /** CDP's resource type: "Preflight" for CORS preflights, "Script", "Fetch", ... */
  type: string
  status: number
  /** Response headers, names lower-cased. */
  headers: Record<string, string>
  /** Request headers, names lower-cased. */
  requestHeaders: Record<string, string>
}

export interface OpenedPage {
  page: Page
  /** Every console line of the page, as `type: text`. */
  consoleLines: string[]
  /** Uncaught exceptions in the page: the snippet must never cause one. */
  pageErrors: string[]
  /** Responses of every request the page made, preflights included. */
  responses: SeenResponse[]
  /**
   * Waits (bounded) until `count` responses of `type` from `url` were seen, and returns
   * them: CDP reports responses a moment after page code has them.
   */
  seen(url: string, type: string, count?: number, timeoutMs?: number): Promise<SeenResponse[]>
  /** Waits (bounded) for a console line containing `text`. */
  waitForConsole(text: string, timeoutMs?: number): Promise<string>
  close(): Promise<void>
}

/**
 * A fresh browser context per page: Chromium caches preflights per context (Max-Age), so
 * each test sees its own preflights. Responses are read through CDP because Playwright's
 * `request` events leave preflights out.
 */
export async function openPage(harness: Harness, url: string): Promise<OpenedPage> {
  const context: BrowserContext = await harness.browser.newContext()
  const page = await context.newPage()
  const consoleLines: string[] = []
  page.on('console', (message) => void consoleLines.push(`${message.type()}: ${message.text()}`))
  const pageErrors: string[] = []
  page.on('pageerror', (error) => void pageErrors.push(String(error)))

  const responses: SeenResponse[] = []
  const requests = new Map<string, { method: string; headers: Record<string, string> }>()
  const cdp = await context.newCDPSession(page)
  cdp.on('Network.requestWillBeSent', (event) => {
    requests.set(event.requestId, { method: event.request.method, headers: lowerCase(event.request.headers) })
  })
  cdp.on('Network.responseReceived', (event) => {
    const request = requests.get(event.requestId)
    responses.push({
      url: event.response.url,
      method: request?.method ?? '?',
      type: event.type,
      status: event.response.status,
      headers: lowerCase(event.response.headers),
      requestHeaders: lowerCase(event.response.requestHeaders ?? request?.headers ?? {}),
    })
  })
  await cdp.send('Network.enable')

  await page.goto(url)
  return {
    page,
    consoleLines,
    pageErrors,
    responses,
    async seen(url, type, count = 1, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      const matching = () => responses.filter((response) => response.url === url && response.type === type)
      while (matching().length < count && Date.now() < deadline) await Bun.sleep(25)
      return matching()
    },
    async waitForConsole(text, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline) {
        const line = consoleLines.find((candidate) => candidate.includes(text))
        if (line !== undefined) return line
        await Bun.sleep(25)
      }
      throw new Error(`no console line containing ${JSON.stringify(text)} within ${timeoutMs} ms; saw:\n${consoleLines.join('\n')}`)
    },
    close: () => context.close(),
  }
}

function lowerCase(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))
}

/** Polls `read` until it returns a non-empty list, up to `timeoutMs`; returns the last read. */
export async function eventually<T>(read: () => Promise<T[]>, timeoutMs = 5000): Promise<T[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const rows = await read()
    if (rows.length > 0 || Date.now() >= deadline) return rows
    await Bun.sleep(50)
  }
}

/** A page that includes the snippet the way docs/snippet.md tells developers to. */
export function snippetPage(harness: Harness, key: string, body = ''): string {
  return `<!doctype html>
<html>
  <head>
    <title>shop</title>
    <script async src="${harness.apiOrigin}/sdk/v0.js" data-key="${key}"></script>
  </head>
  <body>${body}</body>
</html>`
}

/** A page without the snippet, for plain `fetch` calls from page code. */
export const blankPage = '<!doctype html><html><head><title>blank</title></head><body></body></html>'

/** Per-test limit: waits inside tests are bounded at 5 s each, a test makes a few of them. */
export const BROWSER_TEST_TIMEOUT = 20_000
