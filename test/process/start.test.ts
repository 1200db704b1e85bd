import { afterEach, describe, expect, test } from 'bun:test'
import { killStartedProcesses, PROCESS_TEST_TIMEOUT, startProcess as start } from '../support/process.ts'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Real processes (`bun src/index.ts`) on temp dirs and free ports. They do not depend on the
// test database's engine, so they run once: in the pass without DATABASE_URL.
afterEach(killStartedProcesses)

describe.if(!process.env.DATABASE_URL)('process start-up', () => {
  test(
    'a second process on the same DATA_DIR exits naming it and does not touch the data',
    async () => {
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
    },
    PROCESS_TEST_TIMEOUT,
  )

  test(
    'a stale lock of a dead process is taken over',
    async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
      const dead = Bun.spawn(['true'])
      await dead.exited
      Bun.spawnSync(['mkdir', '-p', dir])
      writeFileSync(join(dir, 'keygate.lock'), `${dead.pid}\n`)
      const owner = start({ DATA_DIR: dir })
      await owner.listening()
      expect(readFileSync(join(dir, 'keygate.lock'), 'utf8').trim()).toBe(String(owner.child.pid))
      expect(await owner.stop()).toBe(0)
    },
    PROCESS_TEST_TIMEOUT,
  )

  test(
    'the first start shows the token and the sign-in link on lines of their own; later starts name the source, never the token',
    async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
      const first = start({ DATA_DIR: dir })
      const port = await first.listening()
      await first.said('/dashboard/sign-in/link?token=')
      const file = join(dir, 'admin-token')
      const token = readFileSync(file, 'utf8').trim()
      expect(statSync(file).mode & 0o777).toBe(0o600)
      // stdout stays JSON lines (the log); the block for people is on stderr, each secret alone.
      for (const line of first.stdout().trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow()
      const noticeLines = first
        .stderr()
        .split('\n')
        .map((line) => line.trim())
      expect(noticeLines).toContain(token)
      const link = noticeLines.find((line) => line.startsWith(`http://localhost:${port}/dashboard/sign-in/link?token=`))
      expect(link).toMatch(/^\S+$/)
      expect(first.stdout()).toContain(`admin token: generated on this start and kept in ${file}`)
      expect(await first.stop()).toBe(0)

      const second = start({ DATA_DIR: dir, PORT: String(port) })
      await second.listening()
      await second.said('admin token:')
      const answer = await fetch(`http://127.0.0.1:${port}/admin/v0/businesses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'kept token' }),
      })
      expect(answer.status).toBe(201)
      expect(second.output()).toContain(`admin token: the one kept in ${file}`)
      expect(second.output()).not.toContain(token)
      // Nothing was created, so there is no block for people.
      expect(second.stderr()).toBe('')
      expect(await second.stop()).toBe(0)
    },
    PROCESS_TEST_TIMEOUT,
  )

  test(
    "ADMIN_TOKEN set while a generated token is kept: the environment's token is in effect, the file ignored, and the log says so",
    async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
      mkdirSync(dir, { recursive: true })
      const file = join(dir, 'admin-token')
      const kept = 'adm_kept-from-an-earlier-start-0123'
      writeFileSync(file, `${kept}\n`, { mode: 0o600 })
      const fromEnvironment = 'env-token-0123456789abcdef'
      const service = start({ DATA_DIR: dir, ADMIN_TOKEN: fromEnvironment })
      const port = await service.listening()
      await service.said('admin token:')
      const list = (token: string) =>
        fetch(`http://127.0.0.1:${port}/admin/v0/businesses`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)
      expect(await list(fromEnvironment)).toBe(200)
      expect(await list(kept)).toBe(401)
      expect(service.output()).toContain(
        `admin token: ADMIN_TOKEN from the environment; the token kept in ${file} is ignored while ADMIN_TOKEN is set`,
      )
      expect(service.output()).not.toContain(kept)
      expect(service.output()).not.toContain(fromEnvironment)
      // The file is left as it was, for a later start without ADMIN_TOKEN.
      expect(readFileSync(file, 'utf8').trim()).toBe(kept)
      expect(await service.stop()).toBe(0)
    },
    PROCESS_TEST_TIMEOUT,
  )

  test(
    'a port in use makes the service exit naming the port',
    async () => {
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
    },
    PROCESS_TEST_TIMEOUT,
  )

  test(
    'DATABASE_URL without ADMIN_TOKEN refuses to start',
    async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'kg-proc-')), 'data')
      const child = start({ DATA_DIR: dir, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' })
      expect(await child.exited()).not.toBe(0)
      expect(child.output()).toContain('ADMIN_TOKEN is required with DATABASE_URL')
    },
    PROCESS_TEST_TIMEOUT,
  )
})
