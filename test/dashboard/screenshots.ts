import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Locator, Page } from 'playwright-core'

/**
 * Where the browser tests write their screenshots: the docs' own (`SCREENSHOTS=docs`, to
 * refresh docs/screenshots/), else a scratch directory, so an ordinary run leaves the work
 * tree clean.
 */
export const SCREENSHOTS =
  process.env.SCREENSHOTS === 'docs'
    ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
    : `${mkdtempSync(join(tmpdir(), 'keygate-screenshots-'))}/`

// Docs' screenshots go to a 256-colour palette when pngquant is installed (a third of the
// bytes, no visible change for flat pages like these); without it they are kept as taken.
const PNGQUANT = process.env.SCREENSHOTS === 'docs' ? Bun.which('pngquant') : null

/** Takes `name`.png (a path under the directory may name a subfolder) of a page or a part of one. */
export async function shoot(target: Page | Locator, name: string, options: { fullPage?: boolean } = {}): Promise<string> {
  const path = `${SCREENSHOTS}${name}.png`
  mkdirSync(dirname(path), { recursive: true })
  await target.screenshot({ path, ...('goto' in target ? { fullPage: options.fullPage ?? false } : {}) })
  if (PNGQUANT) Bun.spawnSync([PNGQUANT, '--force', '--skip-if-larger', '--strip', '--quality=70-95', '--output', path, path])
  return path
}
