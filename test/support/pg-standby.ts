import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './redis-server.ts'
import { SERVER_USER, serverTools, testServerSettings } from './pg-server.ts'

/**
 * A PostgreSQL primary and a synchronous standby of its own, on loopback ports, built
 * with the server's binaries (initdb, pg_basebackup -R, pg_ctl) under a temporary
 * directory (./pg-server.ts): the failover that production's primary and standby go through,
 * on this machine.
 */
export interface PrimaryAndStandby {
  readonly primaryPort: number
  readonly standbyPort: number
  /** `postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/keygate`, with `query` appended. */
  url(query?: string): string
  /** One host's URL, for the test's own look at what is stored there. */
  hostUrl(port: number): string
  /** `pg_ctl -m immediate stop` of the primary: no checkpoint, connections cut. */
  killPrimary(): Promise<void>
  /** `pg_ctl promote` of the standby; resolves once it accepts writes. */
  promoteStandby(): Promise<void>
  /** Stops both servers (whatever state they are in) and removes the directory. */
  destroy(): Promise<void>
}

const DATABASE = 'keygate'

export async function startPrimaryAndStandby(bin: string): Promise<PrimaryAndStandby> {
  const tools = serverTools(bin, 'kg-failover-')
  const { root, run, psql, start } = tools
  const primaryDir = join(root, 'primary')
  const standbyDir = join(root, 'standby')
  const primaryPort = await freePort()
  const standbyPort = await freePort()

  const settings = [...testServerSettings(root), 'wal_level = replica', 'max_wal_senders = 4', 'hot_standby = on']
  const cluster: PrimaryAndStandby = {
    primaryPort,
    standbyPort,
    url: (query) => `postgres://${SERVER_USER}@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/${DATABASE}${query ? `?${query}` : ''}`,
    hostUrl: (port) => `postgres://${SERVER_USER}@127.0.0.1:${port}/${DATABASE}`,
    async killPrimary() {
      await run('pg_ctl', ['-D', primaryDir, '-m', 'immediate', 'stop'])
    },
    async promoteStandby() {
      await run('pg_ctl', ['-D', standbyDir, '-w', '-t', '30', 'promote'])
    },
    async destroy() {
      await run('pg_ctl', ['-D', primaryDir, '-m', 'immediate', 'stop'], false)
      await run('pg_ctl', ['-D', standbyDir, '-m', 'immediate', 'stop'], false)
      rmSync(root, { recursive: true, force: true })
    },
  }
  try {
    await tools.init(primaryDir, settings)
    await start(primaryDir, primaryPort)
    await psql(primaryPort, `create database ${DATABASE}`)
    // -R writes standby.signal and primary_conninfo. The standby is copied before the
    // primary names it synchronous, so it does not inherit synchronous_standby_names:
    // promoted, it would otherwise wait for a standby of its own and no commit would end.
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      SERVER_USER,
      '-D',
      standbyDir,
      '-R',
      '-X',
      'stream',
      '--checkpoint=fast',
      '--no-sync',
    ])
    await start(standbyDir, standbyPort)
    await psql(primaryPort, "alter system set synchronous_standby_names = '*'")
    await psql(primaryPort, 'alter system set synchronous_commit = on')
    await psql(primaryPort, 'select pg_reload_conf()')
    for (let i = 0; ; i++) {
      const state = (await psql(primaryPort, 'select sync_state from pg_stat_replication')).trim()
      if (state === 'sync') break
      if (i > 200) throw new Error(`the standby did not become synchronous (pg_stat_replication: "${state}")`)
      await Bun.sleep(50)
    }
    return cluster
  } catch (error) {
    await cluster.destroy()
    throw error
  }
}
