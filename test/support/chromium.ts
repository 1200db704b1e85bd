import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

/**
 * Debian's Chromium, driven by playwright-core (which downloads no browser of its own).
 * Where it is missing, as on a machine with only Node.js and npm, the browser suites say
 * so and stand aside; CI sets REQUIRE_BROWSER=1, which turns that into a failure.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

export const chromiumMissing = !existsSync(CHROMIUM_PATH)

if (chromiumMissing) {
  const why = `no Chromium at ${CHROMIUM_PATH}: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH`
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`browser tests required, but ${why}`)
  console.warn(`\n*** browser tests not run: ${why} ***\n`)
}

// Headless, and quiet on a closed network (no background fetches to Google's hosts).
const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export function launchChromium(timeout = 20_000): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout })
}
