import { afterEach, describe, expect, test } from 'bun:test'
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { killStartedProcesses, startProcess } from '../support/process.ts'

// `npm run dev` (bun --watch) on the embedded database, in a copy of the project so the
// test can edit a source file without touching the tree other tests run from.
const root = join(import.meta.dir, '../..')
const copies: string[] = []

afterEach(async () => {
  await killStartedProcesses()
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function copyProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kg-dev-'))
  copies.push(dir)
  for (const part of ['src', 'db', 'package.json', 'tsconfig.json', 'bunfig.toml'])
    cpSync(join(root, part), join(dir, part), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

async function healthy(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/healthz`).then(
    (response) => response.status === 200,
    () => false,
  )
}

describe.if(!process.env.DATABASE_URL)('npm run dev', () => {
  test('a saved change reloads the process, which takes its own data directory back and answers again', async () => {
    const project = copyProject()
    // A fixed port: the reloaded process must answer where the developer's browser points.
    const probe = Bun.serve({ port: 0, fetch: () => new Response() })
    const fixedPort = probe.port!
    probe.stop(true)
    const dev = startProcess(
      { DATA_DIR: join(project, 'data'), ADMIN_TOKEN: 'dev-watch-token-0123456789', PORT: String(fixedPort) },
      { command: ['npm', 'run', '-s', 'dev'], cwd: project },
    )
    const port = await dev.listening()
    expect(port).toBe(fixedPort)
    expect(await healthy(port)).toBe(true)
    const lockOwner = readFileSync(join(project, 'data', 'keygate.lock'), 'utf8').trim()
    const before = dev.output()

    // An edit that changes nothing the service does: bun --watch reloads on any saved change.
    appendFileSync(join(project, 'src/config.ts'), '\n// edited while npm run dev runs\n')
    const reloaded = async () => {
      for (let i = 0; i < 1200; i++) {
        const since = dev.output().slice(before.length)
        if (since.includes('cannot start')) throw new Error(`the reloaded process refused to start: ${since}`)
        if (/listening on http:\/\/localhost:\d+/.test(since) && (await healthy(port))) return true
        await Bun.sleep(50)
      }
      throw new Error(`no answer after the reload: ${dev.output().slice(before.length)}`)
    }
    expect(await reloaded()).toBe(true)
    expect(dev.output()).not.toContain('is in use by process')
    // The lock names the reloaded process: bun --watch restarts in place, under the same pid.
    expect(readFileSync(join(project, 'data', 'keygate.lock'), 'utf8').trim()).toBe(lockOwner)
  }, 120_000)
})
