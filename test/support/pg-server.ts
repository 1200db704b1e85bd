import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis-server.ts'

// PostgreSQL servers of a test's own, on loopback ports, built with the server's binaries
// (initdb, pg_ctl) under a temporary directory: servers a test may stop and start again
// (./pg-standby.ts builds a primary and standby from the same tools). The server refuses to
// run as root, so every binary runs as the `postgres` user when the test runs as root.

export const SERVER_USER = 'postgres'

/**
 * Where PostgreSQL's server binaries are (the newest of /usr/lib/postgresql/N/bin, or
 * PG_BIN), or why they cannot be used here: a test skips only then.
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

/** The server's tools run in `root` (a directory of the test's own), as the postgres user when the test is root. */
export interface ServerTools {
  readonly root: string
  run(tool: string, args: string[], check?: boolean): Promise<string>
  psql(port: number, statement: string, database?: string): Promise<string>
  /** initdb of `dir` with `settings` appended to its postgresql.conf. */
  init(dir: string, settings: readonly string[]): Promise<void>
  /** `pg_ctl start` of `dir` on `port`; resolves once it accepts connections. */
  start(dir: string, port: number): Promise<void>
}

export function serverTools(bin: string, prefix: string): ServerTools {
  const root = mkdtempSync(join(tmpdir(), prefix))
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const { uid, gid } = postgresUser()
    chownSync(root, uid, gid)
  }
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
  return {
    root,
    run,
    psql: (port, statement, database = 'postgres') =>
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
      ]),
    async init(dir, settings) {
      await run('initdb', ['-D', dir, '-U', SERVER_USER, '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'])
      const conf = join(dir, 'postgresql.conf')
      await Bun.write(conf, `${await Bun.file(conf).text()}\n${settings.join('\n')}\n`)
    },
    async start(dir, port) {
      await run('pg_ctl', ['-D', dir, '-l', join(root, `${port}.log`), '-w', '-t', '30', '-o', `-p ${port}`, 'start'])
    },
  }
}

/** Settings every server of a test's own starts with: loopback only, its socket in its directory, no fsync. */
export function testServerSettings(root: string): string[] {
  // fsync off: nothing here must survive the machine, only the server's own crash (an
  // immediate stop), whose writes the kernel keeps; it saves the shared disk.
  return [
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${root}'`,
    'fsync = off',
    'full_page_writes = off',
    'shared_buffers = 16MB',
    'max_connections = 100',
  ]
}

/** One server of the test's own with one database, which the test may stop and start. */
export interface OwnPostgres {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:PORT/DATABASE`. */
  readonly url: string
  /** `pg_ctl -m fast stop`: connections cut, as when an operator stops it. */
  stop(): Promise<void>
  /** Starts it again; resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops it (whatever state it is in) and removes its directory. */
  destroy(): Promise<void>
}

export async function startOwnPostgres(bin: string, database: string): Promise<OwnPostgres> {
  const tools = serverTools(bin, 'kg-pg-')
  const dir = join(tools.root, 'data')
  const port = await freePort()
  const server: OwnPostgres = {
    port,
    url: `postgres://${SERVER_USER}@127.0.0.1:${port}/${database}`,
    stop: async () => void (await tools.run('pg_ctl', ['-D', dir, '-m', 'fast', '-w', 'stop'])),
    start: () => tools.start(dir, port),
    async destroy() {
      await tools.run('pg_ctl', ['-D', dir, '-m', 'immediate', 'stop'], false)
      rmSync(tools.root, { recursive: true, force: true })
    },
  }
  try {
    await tools.init(dir, testServerSettings(tools.root))
    await tools.start(dir, port)
    await tools.psql(port, `create database ${database}`)
    return server
  } catch (error) {
    await server.destroy()
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
