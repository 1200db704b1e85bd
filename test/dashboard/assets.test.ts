import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ASSET_VERSION, SIGN_IN_PATH } from '../../src/dashboard/views.ts'
import { call, testService } from '../support/service.ts'

// The dashboard's stylesheet and script are the files in src/dashboard/assets/, the script
// built from its TypeScript (src/dashboard/assets.ts), under the URLs every page names.

const ASSETS = join(import.meta.dir, '../../src/dashboard/assets')

describe('the dashboard assets', () => {
  test('every page names the stylesheet and the script under their versioned URLs', async () => {
    const page = await (await call(await testService(), SIGN_IN_PATH)).text()
    expect(page).toContain(`<link rel="stylesheet" href="/dashboard/assets/dashboard.css?v=${ASSET_VERSION}">`)
    expect(page).toContain(`<script src="/dashboard/assets/dashboard.js?v=${ASSET_VERSION}" defer></script>`)
  })

  test('the stylesheet served is src/dashboard/assets/dashboard.css, kept a day, never sniffed', async () => {
    const response = await call(await testService(), `/dashboard/assets/dashboard.css?v=${ASSET_VERSION}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/css; charset=utf-8')
    expect(response.headers.get('cache-control')).toBe('public, max-age=86400')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
    expect(await response.text()).toBe(await Bun.file(join(ASSETS, 'dashboard.css')).text())
  })

  test('the script served is src/dashboard/assets/dashboard.ts built into one classic script', async () => {
    const response = await call(await testService(), `/dashboard/assets/dashboard.js?v=${ASSET_VERSION}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(response.headers.get('cache-control')).toBe('public, max-age=86400')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
    const served = await response.text()
    // The file as a classic script: without its `export {}`, which only makes TypeScript check it as a module.
    const source = (await Bun.file(join(ASSETS, 'dashboard.ts')).text()).replace(/^export \{\}$/m, '')
    const entry = join(ASSETS, 'as-served.ts')
    const built = await Bun.build({ entrypoints: [entry], files: { [entry]: source }, target: 'browser', format: 'iife', minify: true })
    expect(built.success).toBe(true)
    expect(served).toBe((await built.outputs[0]!.text()).trim())
    expect(served).toContain('Live view paused while this tab is hidden.')
    expect(served).toContain('[data-origin-check]')
    // A classic script: no module syntax a <script> without type="module" would refuse.
    expect(served).not.toMatch(/^\s*(import|export)\b|\bexport\s*\{/m)
    expect(() => new Function(served)).not.toThrow()
  })
})
