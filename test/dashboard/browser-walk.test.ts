import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Request as SeenRequest } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../support/chromium.ts'
import { killStartedProcesses, startProcess } from '../support/process.ts'
import { shoot } from './screenshots.ts'
import { KEYS } from './support.ts'

/**
 * The README's first walk, as a newcomer follows it (issue 33): a fresh start of the real
 * process, the README's own commands (read from its "Two minutes with curl" section and run
 * as written, the port aside), the sign-in link in a real Chromium, the dashboard of the
 * business the walk made keys for, and the event the walk tracks arriving on the events page
 * while it is open. Like the process tests, it does not depend on the test database's
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

let browser: Browser | undefined

afterAll(async () => {
  await browser?.close().catch(() => {})
  await killStartedProcesses()
})

describe.skipIf(chromiumMissing || Boolean(process.env.DATABASE_URL))("the README's first walk, in a browser", () => {
  test(
    'from a fresh start to the event it tracks, seen live on the events page of the business it made keys for',
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

      await context.close()
      expect(await server.stop()).toBe(0)
    },
    WALK_TIMEOUT,
  )
})
