import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis-server.ts'

/**
 * A PostgreSQL primary and a synchronous standby of its own, on loopback ports, built
 * with the server's binaries (initdb, pg_basebackup -R, pg_ctl) under a temporary
 * directory: the failover that production's primary and standby go through,
 * on this machine. The server refuses to run as root, so every
 * binary runs as the `postgres` user when the test runs as root.
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
const SERVER_USER = 'postgres'

/**
 * Where PostgreSQL's server binaries are (the newest of /usr/lib/postgresql/N/bin, or
 * PG_BIN), or why they cannot be used here: the test skips only then.
 */
export function serverBinaries(): { bin: string } | { missing: string } {
  const candidates = process.env.PG_BIN
    ? [process.env.PG_BIN]
    : existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .filter((version) => /^\d+$/.test(version))
          .sort((a, b) => Number(b) - Number(a))
          .map((version) => `/usr/lib/postgresql/${version}/bin`)
      : []
  const bin = candidates.find((dir) => ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].every((tool) => existsSync(join(dir, tool))))
  if (bin === undefined) {
    return { missing: 'PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) not found under /usr/lib/postgresql/N/bin or PG_BIN' }
  }
  if (process.getuid?.() === 0 && !Bun.which('runuser')) {
    return { missing: 'running as root without runuser: the PostgreSQL server cannot be started as the postgres user' }
  }
  return { bin }
}

export async function startPrimaryAndStandby(bin: string): Promise<PrimaryAndStandby> {
  const root = mkdtempSync(join(tmpdir(), 'kg-failover-'))
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const { uid, gid } = postgresUser()
    chownSync(root, uid, gid)
  }
  const primaryDir = join(root, 'primary')
  const standbyDir = join(root, 'standby')
  const primaryPort = await freePort()
  const standbyPort = await freePort()

  async function run(tool: string, args: string[], check = true): Promise<string> {
    const command = [join(bin, tool), ...args]
    const child = Bun.spawn(asRoot ? ['runuser', '-u', SERVER_USER, '--', ...command] : command, {
      cwd: root,
      stdout: 'pipe',
      stderr: 'pipe',
      env: { PATH: process.env.PATH ?? '', LC_ALL: 'C' },
    })
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
    if (check && code !== 0) throw new Error(`${tool} ${args.join(' ')} exited ${code}: ${out}${err}`)
    return out
  }
  const psql = (port: number, statement: string, database = 'postgres') =>
    run('psql', [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      SERVER_USER,
      '-d',
      database,
      '-XAtq',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      statement,
    ])
  const start = (dir: string, port: number) =>
    run('pg_ctl', ['-D', dir, '-l', join(root, `${port}.log`), '-w', '-t', '30', '-o', `-p ${port}`, 'start'])

  // fsync off: nothing here must survive the machine, only the server's own crash (an
  // immediate stop), whose writes the kernel keeps; it saves the shared disk.
  const settings = [
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${root}'`,
    'wal_level = replica',
    'max_wal_senders = 4',
    'hot_standby = on',
    'fsync = off',
    'full_page_writes = off',
    'shared_buffers = 16MB',
    'max_connections = 100',
  ]
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
    await run('initdb', ['-D', primaryDir, '-U', SERVER_USER, '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'])
    await Bun.write(
      join(primaryDir, 'postgresql.conf'),
      `${await Bun.file(join(primaryDir, 'postgresql.conf')).text()}\n${settings.join('\n')}\n`,
    )
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

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${SERVER_USER}:`))
  if (!line) throw new Error(`no ${SERVER_USER} user to run the PostgreSQL server as`)
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}
