import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { sql, type SQL } from 'drizzle-orm'
import postgres from 'postgres'
import { pgliteAssets } from './pglite-assets.ts'
import * as schema from './schema/index.ts'

/** The Drizzle handle every service takes; the same type over both drivers. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>

export interface Database {
  readonly db: Db
  readonly engine: 'pglite' | 'postgres'
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** PostgreSQL URL: use postgres.js. Unset: embedded PGlite. */
  databaseUrl?: string
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  dataDir: string
  /** postgres.js pool size. */
  maxConnections?: number
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) {
    const client = postgres(options.databaseUrl, {
      max: options.maxConnections ?? 10,
      onnotice: () => {},
      // A dead server must surface as an error quickly (503 unavailable), not hang.
      connect_timeout: 5,
    })
    const db = drizzlePostgres(client, { schema }) as unknown as Db
    return {
      db,
      engine: 'postgres',
      ping: async () => {
        await client`select 1`
      },
      close: () => client.end({ timeout: 5 }),
    }
  }
  const client = await PGlite.create(options.dataDir, await pgliteAssets())
  const db = drizzlePglite(client, { schema }) as unknown as Db
  return {
    db,
    engine: 'pglite',
    ping: async () => {
      await client.query('select 1')
    },
    close: () => client.close(),
  }
}

/**
 * Rows of a raw query. postgres.js answers an array and PGlite `{ rows }`; code above
 * the driver calls this instead of caring which.
 */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown
  if (Array.isArray(result)) return result as T[]
  return ((result as { rows?: T[] }).rows ?? []) as T[]
}

export { sql }
