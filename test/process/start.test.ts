import { afterEach, describe, expect, test } from 'bun:test'
import { killStartedProcesses, startProcess as start } from '../support/process.ts'
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Real processes (`bun src/index.ts`) on temp dirs and free ports. They do not depend on the
// test database's engine, so they run once: in the pass without DATABASE_URL.
afterEach(killStartedProcesses)

describe.if(!process.env.DATABASE_URL)('process start-up', () => {
  test('a second process on the same DATA_DIR exits naming it and does not touch the data', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
    const first = start({ DATA_DIR: dir })
    await first.listening()
    const token = readFileSync(join(dir, 'admin-token'), 'utf8')
    const second = start({ DATA_DIR: dir })
    expect(await second.exited()).not.toBe(0)
    expect(second.output()).toContain(`DATA_DIR ${dir} is in use`)
    expect(second.output()).not.toContain('listening')
    expect(readFileSync(join(dir, 'admin-token'), 'utf8')).toBe(token)
    expect(readFileSync(join(dir, 'keygate.lock'), 'utf8').trim()).toBe(String(first.child.pid))
    expect(await first.stop()).toBe(0)
    expect(existsSync(join(dir, 'keygate.lock'))).toBe(false)
  })

  test('a stale lock of a dead process is taken over', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
    const dead = Bun.spawn(['true'])
    await dead.exited
    Bun.spawnSync(['mkdir', '-p', dir])
    writeFileSync(join(dir, 'keygate.lock'), `${dead.pid}\n`)
    const owner = start({ DATA_DIR: dir })
    await owner.listening()
    expect(readFileSync(join(dir, 'keygate.lock'), 'utf8').trim()).toBe(String(owner.child.pid))
    expect(await owner.stop()).toBe(0)
  })

  test('the admin token is generated once, kept with mode 0600 and printed only when created', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
    const first = start({ DATA_DIR: dir })
    const port = await first.listening()
    const file = join(dir, 'admin-token')
    const token = readFileSync(file, 'utf8').trim()
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(first.output()).toContain(token)
    expect(await first.stop()).toBe(0)

    const second = start({ DATA_DIR: dir, PORT: String(port) })
    await second.listening()
    const answer = await fetch(`http://127.0.0.1:${port}/admin/v0/businesses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'kept token' }),
    })
    expect(answer.status).toBe(201)
    expect(second.output()).toContain(file)
    expect(second.output()).not.toContain(token)
    expect(await second.stop()).toBe(0)
  })

  test('a port in use makes the service exit naming the port', async () => {
    const holder = Bun.serve({ port: 0, reusePort: false, fetch: () => new Response('taken') })
    try {
      const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
      const second = start({ DATA_DIR: dir, PORT: String(holder.port) })
      expect(await second.exited()).not.toBe(0)
      expect(second.output()).toContain(`port ${holder.port} is already in use`)
      expect(existsSync(join(dir, 'keygate.lock'))).toBe(false)
    } finally {
      holder.stop(true)
    }
  })

  test('DATABASE_URL without ADMIN_TOKEN refuses to start', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
    const child = start({ DATA_DIR: dir, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' })
    expect(await child.exited()).not.toBe(0)
    expect(child.output()).toContain('ADMIN_TOKEN is required with DATABASE_URL')
  })
})
