/**
 * Plumbing shared by the benchmark scripts: the database, the servers and wrk they start,
 * and the business and key they measure with. Nothing here measures anything.
 */
import { existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'

export const root = join(import.meta.dir, '..')

/** DATABASE_URL, else the `bench` database on the local PostgreSQL (created when missing). */
export const databaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/bench'

// ---- Processes ---------------------------------------------------------------------

const children: Bun.Subprocess[] = []

/** A process of the benchmark's, to be killed when the benchmark ends, however it ends. */
export function killOnExit<Child extends Bun.Subprocess>(child: Child): Child {
  children.push(child)
  return child
}

export function stopChildren(): void {
  for (const child of children) child.kill()
}

/** Runs a benchmark's main: its answer is the exit status; Ctrl-C and errors stop its children too. */
export async function runBenchmark(main: () => Promise<number>): Promise<void> {
  process.on('SIGINT', () => {
    stopChildren()
    process.exit(130)
  })
  try {
    process.exitCode = await main()
  } finally {
    stopChildren()
  }
}

/** With two cores or more, the server runs on core 0 and wrk on core 1, so they do not take turns on one core. */
export const pinned = Bun.which('taskset') !== null && cpus().length >= 2

export function onCore(core: number, command: string[]): string[] {
  return pinned ? ['taskset', '-c', String(core), ...command] : command
}

const LISTENING = /listening on http:\/\/localhost:(\d+)/
// Long enough for a server under valgrind, which runs it many times slower.
const START_TIMEOUT_MS = 180_000

/** Starts a server and waits (at most 30 s) for its "listening on" line; answers its base URL. */
export async function startServer(command: string[], env: Record<string, string>, cwd = root) {
  const child = killOnExit(Bun.spawn(command, { cwd, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'inherit' }))
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  const deadline = Date.now() + START_TIMEOUT_MS
  while (Date.now() < deadline) {
    // Raced with the deadline: a server that hangs silently must not hang the benchmark.
    const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)])
    if (next === null || next.done) break
    seen += decoder.decode(next.value)
    const port = LISTENING.exec(seen)?.[1]
    if (port) {
      // Keep draining its output so that a chatty server never blocks on a full pipe.
      void (async () => {
        while (!(await reader.read()).done) {}
      })()
      return { process: child, base: `http://127.0.0.1:${port}` }
    }
  }
  throw new Error(`${command.join(' ')} did not start within ${START_TIMEOUT_MS / 1000} s; its output:\n${seen}`)
}

/** `wrk --version` prints its version and usage, then exits 1. */
export function wrkVersion(): string {
  const result = Bun.spawnSync(['wrk', '--version'])
  const text = result.stdout.toString() + result.stderr.toString()
  return text
    .split('\n')[0]!
    .replace(/\s+Copyright.*/, '')
    .trim()
}

// ---- Database ----------------------------------------------------------------------

/** The URL of the database `name` on the server `base` names. */
export function databaseNamed(base: string, name: string): string {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * The tree a benchmark compares with: COMPARE_TREE, or main's commit unpacked once under
 * /tmp with this checkout's node_modules linked in.
 */
export function beforeTree(): string {
  if (process.env.COMPARE_TREE) return process.env.COMPARE_TREE
  const commit = Bun.spawnSync(['git', 'rev-parse', 'main'], { cwd: root }).stdout.toString().trim()
  const dir = `/tmp/keygate-before-${commit.slice(0, 12)}`
  if (!existsSync(join(dir, 'src'))) {
    mkdirSync(dir, { recursive: true })
    const archive = Bun.spawnSync(['sh', '-c', `git archive ${commit} | tar -x -C ${dir}`], { cwd: root })
    if (archive.exitCode !== 0) throw new Error(archive.stderr.toString())
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  }
  return dir
}

/** Creates the database of `url` when it does not exist, through the server's `postgres` database. */
export async function ensureDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1))
  const maintenance = new URL(url)
  maintenance.pathname = '/postgres'
  const sql = postgres(maintenance.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    const [found] = await sql`select 1 as found from pg_database where datname = ${name}`
    if (!found) {
      await sql.unsafe(`create database "${name.replaceAll('"', '""')}"`)
      console.log(`created database ${name}`)
    }
  } finally {
    await sql.end({ timeout: 5 })
  }
}

// ---- Admin API ---------------------------------------------------------------------

/**
 * The service on core 0, on `databaseUrl` (which must exist: see ensureDatabase), with an
 * admin token of this run's for its admin API; `cwd` runs another checkout's src/index.ts;
 * `command` replaces the whole command line (a server under valgrind, say).
 */
export async function startService(options: { env?: Record<string, string>; cwd?: string; entry?: string; command?: string[] } = {}) {
  const adminToken = `bench-${crypto.randomUUID()}`
  const service = await startServer(
    options.command ?? onCore(0, [process.execPath, options.entry ?? 'src/index.ts']),
    { DATABASE_URL: databaseUrl, PORT: '0', ADMIN_TOKEN: adminToken, ...options.env },
    options.cwd,
  )
  return { ...service, adminToken, admin: adminClient(service.base, adminToken) }
}

/** The origin the benchmark keys allow; requests send an Origin under it. */
export const ALLOWED_ORIGIN = 'example.com'

/** Businesses and keys made through the service's admin API, as an operator would. */
export function adminClient(base: string, adminToken: string) {
  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${base}/admin/v0${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    })
    const text = await response.text()
    if (response.status !== 201) throw new Error(`POST /admin/v0${path} answered ${response.status}: ${text}`)
    return JSON.parse(text) as Record<string, unknown>
  }
  return {
    /** Any admin call without a body; answers the response as it is. */
    request(method: string, path: string): Promise<Response> {
      return fetch(`${base}/admin/v0${path}`, {
        method,
        headers: { authorization: `Bearer ${adminToken}` },
        signal: AbortSignal.timeout(10_000),
      })
    },
    /** Answers the new business's id. */
    async createBusiness(name: string): Promise<string> {
      const business = await post('/businesses', { name })
      if (typeof business.id !== 'string') throw new Error('the business create answer holds no id')
      return business.id
    },
    /** A public ANALYTICS_WRITE key for ALLOWED_ORIGIN unless `settings` say otherwise; answers the key itself. */
    async createKey(businessId: string, name: string, settings: Record<string, unknown> = {}): Promise<string> {
      const created = await post(`/businesses/${businessId}/keys`, {
        type: 'public',
        name,
        scopes: ['ANALYTICS_WRITE'],
        allowedOrigins: [ALLOWED_ORIGIN],
        createdBy: 'bench',
        ...settings,
      })
      if (typeof created.key !== 'string') throw new Error('the key create answer holds no key')
      return created.key
    },
  }
}
