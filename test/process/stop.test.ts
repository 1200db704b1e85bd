import { afterEach, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, queryRows, sql } from '../../db/client.ts'
import { testDatabase, testDatabaseUrl } from '../support/database.ts'
import { sendPageViews } from '../support/load.ts'
import { adminPost, killStartedProcesses, PROCESS_TEST_TIMEOUT, startProcess } from '../support/process.ts'
import { ADMIN_TOKEN } from '../support/service.ts'
import { waitUntil } from '../support/wait.ts'

// The service as a real process under load, stopped politely (SIGTERM) and violently
// (kill -9). 202 means committed, so every acknowledged event must
// be in the database afterwards. Whether a write survives a kill depends on the engine, so
// this runs in both passes: on embedded PGlite in a temp DATA_DIR, and on PostgreSQL.
const databaseUrl = await testDatabaseUrl()
const ORIGIN = 'https://shop.example.com'

afterEach(killStartedProcesses)

async function serviceUnderLoad() {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'kg-stop-')), 'data')
  const service = startProcess({
    ADMIN_TOKEN,
    // The key's own budget is not what is under test.
    RATE_LIMIT_PUBLIC: '1000000/1',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir }),
  })
  const base = `http://127.0.0.1:${await service.listening()}`
  const admin = adminPost(base, ADMIN_TOKEN)
  const business = await admin('/admin/v0/businesses', { name: 'Stopped under load' })
  const { key } = await admin(`/admin/v0/businesses/${business.id}/keys`, {
    type: 'public',
    name: 'site',
    scopes: ['ANALYTICS_WRITE'],
    allowedOrigins: ['shop.example.com'],
    createdBy: 'stop test',
  })
  const load = sendPageViews({ base: () => base, key, origin: ORIGIN, concurrency: 32 })
  await waitUntil(() => load.acknowledged.length >= 300, '300 acknowledged events', 20_000)
  return { service, load, businessId: business.id, dataDir }
}

/** The anonymous ids stored for the business, read once the process is gone. */
async function storedIds(businessId: string, dataDir: string): Promise<Set<string>> {
  const query = sql`select anonymous_id from analytics_events where business_id = ${businessId}`
  if (databaseUrl) {
    const rows = await queryRows<{ anonymous_id: string }>((await testDatabase()).db, query)
    return new Set(rows.map((row) => row.anonymous_id))
  }
  const database = await openDatabase({ dataDir })
  try {
    const rows = await queryRows<{ anonymous_id: string }>(database.db, query)
    return new Set(rows.map((row) => row.anonymous_id))
  } finally {
    await database.close()
  }
}

describe(`stopping the service under load (${databaseUrl ? 'PostgreSQL' : 'embedded PGlite'})`, () => {
  test(
    'SIGTERM: it finishes in-flight requests, writes what it holds and exits 0; every 202 is stored',
    async () => {
      const { service, load, businessId, dataDir } = await serviceUnderLoad()
      service.child.kill('SIGTERM')
      expect(await service.exited()).toBe(0)
      await load.stop()
      const stored = await storedIds(businessId, dataDir)
      const lost = load.acknowledged.filter((id) => !stored.has(id))
      console.log(`  SIGTERM: ${load.acknowledged.length} acknowledged, ${stored.size} stored, ${lost.length} lost`)
      expect(lost).toEqual([])
      expect(service.output()).toContain('SIGTERM: finishing in-flight requests')
      expect(service.output()).toContain('SIGTERM: stopped')
    },
    PROCESS_TEST_TIMEOUT,
  )

  test(
    'kill -9: no acknowledged event is lost',
    async () => {
      const { service, load, businessId, dataDir } = await serviceUnderLoad()
      service.child.kill('SIGKILL')
      expect(await service.exited()).not.toBe(0)
      await load.stop()
      const stored = await storedIds(businessId, dataDir)
      const lost = load.acknowledged.filter((id) => !stored.has(id))
      console.log(`  kill -9: ${load.acknowledged.length} acknowledged, ${stored.size} stored, ${lost.length} lost`)
      expect(lost).toEqual([])
    },
    PROCESS_TEST_TIMEOUT,
  )
})

describe('stopping `npm start`', () => {
  test(
    'SIGTERM to the npm process stops the service: its port closes and its log says stopped',
    async () => {
      const dataDir = join(mkdtempSync(join(tmpdir(), 'kg-npm-stop-')), 'data')
      // As a process supervisor runs it: the npm process is the one it knows and signals.
      const npm = startProcess(
        { ADMIN_TOKEN, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir }) },
        { command: ['npm', 'start', '--silent'], cwd: join(import.meta.dir, '../..') },
      )
      const port = await npm.listening()
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
      npm.child.kill('SIGTERM')
      await npm.exited()
      await waitUntil(() => npm.output().includes('SIGTERM: stopped'), 'the stopped line', 10_000)
      await expect(fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow()
    },
    PROCESS_TEST_TIMEOUT,
  )
})
