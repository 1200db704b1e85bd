import { describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { adminTokenLine, resolveAdminToken } from '../../src/process/admin-token.ts'
import { firstStartNotice } from '../../src/process/first-start.ts'

const ENV_TOKEN = 'from-the-environment-0123456789'
const KEPT_TOKEN = 'adm_kept-by-an-earlier-start-0123'

function dataDir(options: { withKeptToken?: boolean } = {}): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'kg-token-')), 'data')
  if (options.withKeptToken) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'admin-token'), `${KEPT_TOKEN}\n`, { mode: 0o600 })
  }
  return dir
}

describe('the admin token in effect, and the line every start logs about it', () => {
  test('ADMIN_TOKEN alone: the environment, no file named', () => {
    const token = resolveAdminToken({ adminToken: ENV_TOKEN, databaseUrl: undefined, dataDir: dataDir() })
    expect(token).toEqual({ token: ENV_TOKEN, source: 'environment', file: undefined })
    expect(adminTokenLine(token)).toBe('admin token: ADMIN_TOKEN from the environment')
  })

  test('ADMIN_TOKEN while a generated token is kept: the environment wins, the file is named as ignored and left alone', () => {
    const dir = dataDir({ withKeptToken: true })
    const token = resolveAdminToken({ adminToken: ENV_TOKEN, databaseUrl: undefined, dataDir: dir })
    expect(token).toMatchObject({ token: ENV_TOKEN, source: 'environment', file: join(dir, 'admin-token') })
    const line = adminTokenLine(token)
    expect(line).toContain('ADMIN_TOKEN from the environment')
    expect(line).toContain(`the token kept in ${join(dir, 'admin-token')} is ignored`)
    expect(line).not.toContain(ENV_TOKEN)
    expect(line).not.toContain(KEPT_TOKEN)
    expect(readFileSync(join(dir, 'admin-token'), 'utf8').trim()).toBe(KEPT_TOKEN)
  })

  test('with DATABASE_URL the data directory plays no part', () => {
    const token = resolveAdminToken({
      adminToken: ENV_TOKEN,
      databaseUrl: 'postgres://x@127.0.0.1/db',
      dataDir: dataDir({ withKeptToken: true }),
    })
    expect(token).toEqual({ token: ENV_TOKEN, source: 'environment', file: undefined })
    expect(() => resolveAdminToken({ adminToken: undefined, databaseUrl: 'postgres://x@127.0.0.1/db', dataDir: dataDir() })).toThrow(
      'ADMIN_TOKEN is required with DATABASE_URL',
    )
  })

  test('a kept token is named by its file, never printed', () => {
    const dir = dataDir({ withKeptToken: true })
    const token = resolveAdminToken({ adminToken: undefined, databaseUrl: undefined, dataDir: dir })
    expect(token).toEqual({ token: KEPT_TOKEN, source: 'kept', file: join(dir, 'admin-token') })
    expect(adminTokenLine(token)).toContain(join(dir, 'admin-token'))
    expect(adminTokenLine(token)).not.toContain(KEPT_TOKEN)
  })

  test('a generated token is printed on the start that made it', () => {
    const dir = dataDir()
    const token = resolveAdminToken({ adminToken: undefined, databaseUrl: undefined, dataDir: dir })
    expect(token.source).toBe('generated')
    expect(token.token).toMatch(/^adm_[A-Za-z0-9_-]{32}$/)
    expect(readFileSync(join(dir, 'admin-token'), 'utf8').trim()).toBe(token.token)
    expect(adminTokenLine(token)).toEndWith(`: ${token.token}`)
  })
})

describe('the first start notice', () => {
  const signIn = {
    url: 'http://localhost:3000/dashboard/sign-in/link?token=abc',
    email: 'owner@example.com',
    businessName: 'My business',
    expiresAt: new Date('2026-11-28T06:31:00Z'),
  }

  test('is nothing when this start made nothing', () => {
    expect(firstStartNotice({})).toBeNull()
  })

  test('puts the token and the link each on a line of its own, and says whom and until when', () => {
    const notice = firstStartNotice({ adminToken: { token: 'adm_secret', file: '/data/admin-token' }, signIn })!
    const lines = notice.split('\n').map((line) => line.trim())
    expect(lines).toContain('adm_secret')
    expect(lines).toContain(signIn.url)
    expect(notice).toContain('/data/admin-token')
    expect(notice).toContain('owner@example.com, owner of "My business"')
    expect(notice).toContain('until 2026-11-28 06:31 UTC')
  })

  test('names where the service answers, for the CLI, whatever the port', () => {
    const notice = firstStartNotice({
      adminToken: { token: 'adm_secret', file: '/data/admin-token' },
      serviceUrl: 'http://localhost:5200',
    })!
    expect(notice.split('\n').map((line) => line.trim())).toContain('export KEYGATE_URL=http://localhost:5200')
    // Nothing made: nothing to say, the address included.
    expect(firstStartNotice({ serviceUrl: 'http://localhost:5200' })).toBeNull()
  })

  test('shows only what was made: a link alone when ADMIN_TOKEN was given', () => {
    const notice = firstStartNotice({ signIn })!
    expect(notice).toContain(signIn.url)
    expect(notice).not.toContain('Admin token')
  })
})
