import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, queryRows, sql } from '../../db/client.ts'
import type { AppOptions, Service } from '../../src/app.ts'
import { testDatabaseUrl, testEventsDatabase } from '../support/database.ts'
import { startProcess } from '../support/process.ts'
import { ADMIN_TOKEN, seedBusiness, seedKey, testService } from '../support/service.ts'

const databaseUrl = await testDatabaseUrl()

/** The run's engine, for test names: the service processes use the same one. */
export const ENGINE = databaseUrl ? 'PostgreSQL' : 'embedded PGlite'

/** The service on the run's database, listening on a loopback port of its own (in this process). */
export async function listeningService(
  options: Partial<AppOptions> = {},
): Promise<{ service: Service; base: string; stop(): Promise<void> }> {
  const service = await testService(options)
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  return {
    service,
    base: `http://127.0.0.1:${service.app.server!.port}`,
    async stop() {
      await service.app.stop(true)
      await service.drain()
    },
  }
}

/** A business and a private key that tracks, on the run's database (through the key service, as the admin API does). */
export async function privateKey(service: Service, rateLimit: { limit: number; windowSeconds: number } | null = null) {
  const businessId = await seedBusiness(service, 'Backend client')
  const { key, record } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_WRITE'], rateLimit })
  return { businessId, key, keyId: record.id }
}

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

/**
 * The service as operators run it (`bun src/index.ts`), on this run's engine: PostgreSQL when
 * DATABASE_URL is set, else the embedded engine in a data directory of its own. `restart()`
 * stops it with SIGTERM and starts it again on the same database and port.
 */
export async function serviceProcess() {
  const dataDir = databaseUrl ? undefined : join(mkdtempSync(join(tmpdir(), 'kg-client-')), 'data')
  const port = freePort()
  const env = { ADMIN_TOKEN, PORT: String(port), ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir! }) }
  const start = async () => {
    const started = startProcess(env)
    await started.listening()
    return started
  }
  let running: Awaited<ReturnType<typeof start>> | undefined = await start()
  const base = `http://127.0.0.1:${port}`

  const stop = async () => {
    if (!running) return
    const stopping = running
    running = undefined
    const code = await stopping.stop()
    if (code !== 0) throw new Error(`the service exited ${code}: ${stopping.output()}`)
  }
  return {
    base,
    dataDir,
    stop,
    async restart() {
      await stop()
      running = await start()
    },
    /** Through the process's admin API: a business and a private key that tracks. */
    async privateKey(rateLimit: { limit: number; windowSeconds: number } | null = null) {
      const post = async (path: string, body: unknown) => {
        const response = await fetch(`${base}/admin/v0${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        if (response.status !== 201) throw new Error(`POST /admin/v0${path} answered ${response.status}: ${await response.text()}`)
        return (await response.json()) as { id: string; key: string }
      }
      const business = await post('/businesses', { name: 'Backend client' })
      const { key } = await post(`/businesses/${business.id}/keys`, {
        type: 'private',
        name: 'orders service',
        scopes: ['ANALYTICS_WRITE'],
        rateLimit,
        createdBy: 'client test',
      })
      return { businessId: business.id, key }
    },
  }
}

export interface Stored {
  rows: number
  distinctIds: number
  /** Rows beyond the first of an id. */
  storedTwice: number
  ids: Set<string>
}

/** What analytics_events holds for the business: read from the run's database, or from the data directory of a stopped process. */
export async function storedEvents(businessId: string, dataDir?: string): Promise<Stored> {
  const query = sql`select id::text as id from analytics_events where business_id = ${businessId}`
  let rows: { id: string }[]
  if (dataDir) {
    const database = await openDatabase({ dataDir })
    try {
      rows = await queryRows<{ id: string }>(database.db, query)
    } finally {
      await database.close()
    }
  } else {
    rows = await queryRows<{ id: string }>((await testEventsDatabase()).db, query)
  }
  const ids = new Set(rows.map((row) => row.id))
  return { rows: rows.length, distinctIds: ids.size, storedTwice: rows.length - ids.size, ids }
}

/** A fetch that records each answer's status (0: no answer) before handing it on. */
export function recordingFetch(onAnswer: (response: Response) => void = () => {}) {
  const statuses: number[] = []
  const fetchAndRecord = async (url: string, init: RequestInit) => {
    try {
      const response = await fetch(url, init)
      statuses.push(response.status)
      onAnswer(response)
      return response
    } catch (error) {
      statuses.push(0)
      throw error
    }
  }
  return { fetch: fetchAndRecord, statuses }
}
