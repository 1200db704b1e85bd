import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import type { Browser, Page, Request as SeenRequest } from 'playwright-core'
import { createClient } from '../../clients/node/src/index.ts'
import { openDatabase } from '../../db/client.ts'
import { analyticsEvents } from '../../db/schema/index.ts'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { killStartedProcesses, startProcess } from '../support/process.ts'
import { shoot } from './screenshots.ts'
import { KEYS } from './support.ts'

/**
 * The README's first walk, as a newcomer follows it (issue 33): a fresh start of the real
 * process, the README's own commands (read from its "Two minutes with curl" section and run
 * as written, the port aside), the sign-in link in a real Chromium, the dashboard of the
 * business the walk made keys for, and the event the walk tracks arriving on the events page
 * while it is open; then the owner's next hour (issue 43): a private key made in the
 * dashboard, used by the backend client, its event a line of the Events table. Like the process tests, it does not depend on the test database's
 * engine (the process has its own embedded database), so it runs once: without DATABASE_URL.
 */
const WALK_TIMEOUT = 300_000
const README = readFileSync(join(import.meta.dir, '../../README.md'), 'utf8')
const ROOT = join(import.meta.dir, '../..')

/** The shell commands of the README between two headings, `\`-continued lines joined, comments dropped. */
function commandsOf(from: string, to: string): string[] {
  const section = README.slice(README.indexOf(from), README.indexOf(to))
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
  const commands: string[] = []
  for (const block of blocks) {
    for (const line of block.replace(/\\\n\s*/g, '').split('\n')) {
      const command = line.replace(/\s+#.*$/, '').trim()
      if (command !== '' && !command.startsWith('#')) commands.push(command)
    }
  }
  return commands
}

/** The one README command that starts with `prefix`, and holds `part` when given. */
function readmeCommand(commands: string[], prefix: string, part = ''): string {
  const found = commands.filter((c) => c.startsWith(prefix) && c.includes(part))
  expect(found).toHaveLength(1)
  return found[0]!
}

/** Runs a README command line in a shell, as a reader pastes it; `npm run cli --` is the CLI itself. */
function run(command: string, env: Record<string, string>): string {
  const line = command.replace(/^npm run cli -- /, `${process.execPath} src/cli.ts `)
  const result = Bun.spawnSync(['sh', '-c', line], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })
  const out = result.stdout.toString()
  if (result.exitCode !== 0) throw new Error(`${command} exited ${result.exitCode}: ${out}${result.stderr.toString()}`)
  return out
}

function field(output: string, label: string): string {
  const value = new RegExp(`^${label}\\s+(\\S+)`, 'm').exec(output)?.[1]
  if (!value) throw new Error(`no ${label} in: ${output}`)
  return value
}

/** Sideways scrolling a page needs, in CSS pixels (0 when it fits its viewport). */
const overflowOf = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)

/** Screenshots at a desktop's width and a phone's (test/dashboard/browser-leaks.test.ts takes the same two). */
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 860 },
  { name: 'phone', width: 390, height: 844 },
]

/**
 * The walk's owner makes a private key for their backend in the dashboard (docs/dashboard.md),
 * copies it from the page that shows it once, and the backend client (clients/node) tracks an
 * order with it; the order is then a line of the Events table that opens on its properties.
 * Answers the new key's id and the event's, for the stored row.
 */
async function backendWalk(page: Page, origin: string): Promise<{ keyId: string; eventId: string }> {
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
  await page.goto(`${origin}${KEYS}`)
  await page.getByRole('link', { name: 'Create private key' }).click()
  await page.waitForURL(`${origin}${KEYS}/new-private`)
  await page.getByLabel('Name').fill('Order service')
  expect(await page.getByLabel('ANALYTICS_WRITE').isChecked()).toBe(true)
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${origin}${KEYS}/new-private`),
    page.getByRole('button', { name: 'Create key' }).click(),
  ])
  expect(answer.status()).toBe(200)

  // Shown once: the key, its Copy button and the warning, on screen at both widths without sideways scrolling.
  await page.getByRole('heading', { name: 'Your new private key' }).waitFor()
  const key = await page.getByLabel('Private key').inputValue()
  expect(key).toMatch(/^sk_[A-Za-z0-9]{36}$/)
  expect(await page.locator('#secret-warning').textContent()).toContain('Copy it now: it is shown this once.')
  const keyHref = await page.getByRole('link', { name: 'I have stored it: go to the key' }).getAttribute('href')
  const keyId = new RegExp(`^${KEYS}/([0-9a-f-]{36})$`).exec(keyHref ?? '')?.[1]
  expect(keyId).toBeDefined()
  for (const viewport of WIDTHS) {
    await page.setViewportSize(viewport)
    expect(await overflowOf(page)).toBeLessThanOrEqual(0)
    for (const shown of [page.getByLabel('Private key'), page.getByRole('button', { name: 'Copy key' }), page.locator('#secret-warning')]) {
      expect(await shown.isVisible()).toBe(true)
      const box = (await shown.boundingBox())!
      expect(box.x + box.width).toBeLessThanOrEqual(viewport.width)
    }
    // The whole key in its field, not cut at the field's end.
    expect(await page.getByLabel('Private key').evaluate((field) => field.scrollWidth - field.clientWidth)).toBeLessThanOrEqual(0)
    await shoot(page, `${viewport.name}/private-key-shown-once`, { fullPage: true })
  }
  await page.getByRole('button', { name: 'Copy key' }).click()
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key)

  // The backend: the client's README example, with the key the page showed.
  const statuses: number[] = []
  const keygate = createClient({
    baseUrl: origin,
    key,
    fetch: async (input, init) => {
      const response = await fetch(input, init)
      statuses.push(response.status)
      return response
    },
  })
  const eventId = keygate.track({ eventType: 'order_paid', personId: 'cus_42', properties: { total: 42.5 } })
  expect(await keygate.shutdown(10_000)).toEqual({ queued: 0, committed: 1, dropped: 0 })
  expect(statuses).toEqual([202])

  // The Events table: one line (time, type, key, origin, person) that opens on its properties.
  await page.setViewportSize(WIDTHS[0]!)
  await page.goto(`${origin}/dashboard/events`)
  const row = page.locator(`li.event[data-event-id="${eventId}"]`)
  await row.waitFor()
  expect(await page.locator('li.event').first().getAttribute('data-event-id')).toBe(eventId)
  const line = row.locator('summary')
  expect(await line.locator('.event-type').textContent()).toBe('order_paid')
  expect(await line.locator('.event-key').textContent()).toBe('Order service')
  expect(await line.locator('.event-origin').textContent()).toBe('no origin')
  expect(await line.locator('.event-person').textContent()).toBe('cus_42')
  expect(await row.locator('pre.properties').isVisible()).toBe(false)
  await line.click()
  expect(await row.locator('pre.properties').textContent()).toBe('{\n  "total": 42.5\n}')
  expect(await row.locator('.event-fields').textContent()).toContain(eventId)
  for (const viewport of WIDTHS) {
    await page.setViewportSize(viewport)
    expect(await overflowOf(page)).toBeLessThanOrEqual(0)
    expect(await line.locator('.event-type').isVisible()).toBe(true)
    await shoot(page, `${viewport.name}/events-table`, { fullPage: true })
  }
  return { keyId: keyId!, eventId }
}

let browser: Browser | undefined

afterAll(async () => {
  await browser?.close().catch(() => {})
  await killStartedProcesses()
})

describe.skipIf(chromiumMissing || Boolean(process.env.DATABASE_URL))("the README's first walk, in a browser", () => {
  test(
    'from a fresh start to the event it tracks, seen live on the events page of the business it made keys for; then a private key made in the dashboard, used by the backend client, its event in the Events table',
    async () => {
      const walk = commandsOf('## Two minutes with curl', '## When a key leaks')
      // "ADMIN_TOKEN=change-me-to-a-long-secret npm start", on a free port and a fresh directory.
      const token = /^ADMIN_TOKEN=(\S+) npm start$/m.exec(walk.join('\n'))![1]!
      const dir = join(mkdtempSync(join(tmpdir(), 'kg-walk-')), 'data')
      const server = startProcess({ DATA_DIR: dir, ADMIN_TOKEN: token })
      const port = await server.listening(120_000)
      const origin = `http://localhost:${port}`
      const env = { ADMIN_TOKEN: token, KEYGATE_URL: origin }

      // The CLI commands as written; the business id goes where the README shows "5be388d3-…".
      const business = field(run(readmeCommand(walk, 'npm run cli -- businesses create'), env), 'id')
      const withId = (command: string) => command.replaceAll('5be388d3-…', business)
      const key = field(run(withId(readmeCommand(walk, 'npm run cli -- keys create', '--type public')), env), 'KEY')
      expect(key).toMatch(/^pk_/)
      const owner = run(withId(readmeCommand(walk, 'npm run cli -- members create')), env)
      const link = field(owner, 'SIGN-IN LINK')
      expect(link).toStartWith(`${origin}/dashboard/sign-in/link?token=`)

      browser = await launchChromium(30_000)
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
      context.setDefaultTimeout(20_000)
      const page = await context.newPage()
      const posts: string[] = []
      page.on('request', (request: SeenRequest) => {
        if (request.method() === 'POST') posts.push(request.url())
      })

      // The link: two different passwords are caught before anything is sent, and nothing is cleared.
      await page.goto(link)
      await page.getByLabel('New password').fill('a long and private passphrase')
      await page.getByLabel('Repeat the password').fill('a long and private passphrase!')
      await page.getByRole('button', { name: 'Save password and sign in' }).click()
      await page.getByText('The two passwords differ; type the same password again.').waitFor()
      expect(posts).toEqual([])
      expect(page.url()).toBe(link)
      expect(await page.getByLabel('New password').inputValue()).toBe('a long and private passphrase')
      expect(await page.getByLabel('Repeat the password').getAttribute('aria-invalid')).toBe('true')
      await shoot(page, 'passwords-differ')
      await page.getByLabel('Repeat the password').fill('a long and private passphrase')
      await page.getByRole('button', { name: 'Save password and sign in' }).click()

      // The dashboard opens on Acme, the business the walk made its key for.
      await page.waitForURL(`${origin}${KEYS}`)
      expect(await page.locator('.topbar .business').textContent()).toBe('Acme')
      await page.getByRole('link', { name: 'Website', exact: true }).click()
      await page.getByText('Waiting for the first request…').waitFor()
      await page.getByRole('link', { name: "Watch this key's events arrive live" }).click()
      await page.waitForURL(/\/dashboard\/events\?key=/)
      await page.getByText('No events sent with Website yet.').waitFor()
      await page.getByText('Live: new events appear at the top as they arrive.').waitFor()

      // The README's tracking call, pasted into a terminal while the page is open.
      // As written: the walk's curl commands find the service through KEYGATE_URL, on whatever port it took.
      const track = readmeCommand(walk, 'curl -s -X POST $KEYGATE_URL/api/v0/analytics')
      expect(run(track, { ...env, KEY: key })).toBe('{"accepted":1}')
      const event = page.locator('li.event').first()
      await event.waitFor()
      expect(await event.locator('.event-type').textContent()).toBe('signup')
      expect(await event.textContent()).toContain('https://example.com')
      expect(await event.locator('pre.properties').textContent()).toBe('{\n  "plan": "pro"\n}')
      await page.getByText(/Live: new events appear at the top as they arrive\. 1 new since the page opened, the latest at/).waitFor()
      await shoot(page, 'readme-walk-event', { fullPage: true })

      // "Reading events over the API": the README's private key and query find the same event.
      const reading = commandsOf('### Reading events over the API', '## When a key leaks')
      const secret = field(run(withId(readmeCommand(reading, 'npm run cli -- keys create', '--type private')), env), 'KEY')
      const read = JSON.parse(run(readmeCommand(reading, 'curl -s "$KEYGATE_URL/api/v0/analytics'), { ...env, SK: secret })) as {
        data: { eventType: string; properties: unknown; origin: string; id: string }[]
        nextCursor: string | null
      }
      expect(read.data).toEqual([
        expect.objectContaining({ eventType: 'signup', properties: { plan: 'pro' }, origin: 'https://example.com' }),
      ])
      expect(read.data[0]!.id).toBe((await event.getAttribute('data-event-id'))!)
      expect(read.nextCursor).toBeNull()

      const backend = await backendWalk(page, origin)
      await context.close()
      expect(await server.stop()).toBe(0)

      // The stored row, read from the data directory once the service has let it go.
      const database = await openDatabase({ dataDir: dir })
      try {
        const [row] = await database.db.select().from(analyticsEvents).where(eq(analyticsEvents.id, backend.eventId))
        expect(row).toEqual(expect.objectContaining({ keyId: backend.keyId, eventType: 'order_paid', personId: 'cus_42', origin: null }))
      } finally {
        await database.close()
      }
    },
    WALK_TIMEOUT,
  )
})
