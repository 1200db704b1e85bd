import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { queryRows, sql } from '../../db/client.ts'
import { testDatabase } from '../support/database.ts'
import { seedBusiness, seedKey } from '../support/service.ts'
import { ENGINE, listeningService } from './support.ts'

// @keygate/client as a user gets it: `npm pack` of clients/node, installed from the tarball
// in a fresh directory with npm offline (the package has no dependencies), then imported and
// used on Node.js and Bun against the real service, and type-checked as a user's TypeScript
// would be. Other runtimes (Deno, edge workers) are covered by what the built module may
// touch: web-standard globals only, no import and no Node.js global (docs/decisions.md,
// "The backend client runs on web standards alone").

const ROOT = resolve(import.meta.dir, '../..')
const PACKAGE = join(ROOT, 'clients/node')
const BIN = join(ROOT, 'node_modules/.bin')
const RUNTIMES = {
  node: ['node'],
  bun: [process.execPath],
}

let work: string
let app: string

async function run(command: string[], cwd: string, env: Record<string, string> = {}) {
  const child = Bun.spawn(command, {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: work,
      npm_config_cache: join(work, 'npm-cache'),
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`${command.join(' ')} exited ${code}:\n${stdout}\n${stderr}`)
  return stdout
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'kg-client-pack-'))
  // npm runs the package's prepack (the build) with the repository's tools on its PATH.
  await run(['npm', 'pack', '--pack-destination', work, '--silent'], PACKAGE, { PATH: `${BIN}:${process.env.PATH}` })
  const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'))!
  app = join(work, 'app')
  mkdirSync(app)
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'a-backend', private: true, type: 'module', dependencies: { '@keygate/client': `file:../${tarball}` } }),
  )
  await run(['npm', 'install', '--offline', '--no-audit', '--no-fund'], app)
}, 120_000)

afterAll(() => rmSync(work, { recursive: true, force: true }))

const SMOKE = `import { createClient, KeygateError } from '@keygate/client'
const env = process.env
const client = createClient({ key: env.KEYGATE_KEY, baseUrl: env.KEYGATE_URL })
const me = await client.whoami()
const refused = await client.getPerson({ id: '00000000-0000-7000-8000-000000000000' })
for (let i = 0; i < 150; i++) client.track({ eventType: 'smoke', properties: { runtime: env.RUNTIME, i } })
const stats = await client.shutdown(20000)
console.log(JSON.stringify({ keyType: me.data?.keyType, limit: me.rateLimit?.limit, refused: refused.error?.code, isError: refused.error instanceof KeygateError, stats }))
`

describe(`the packed client, installed from its tarball (${ENGINE})`, () => {
  test('the tarball holds the built module, its types and the README, and nothing else', async () => {
    const listing = await run(['tar', '-tzf', readdirSync(work).find((name) => name.endsWith('.tgz'))!], work)
    const files = listing.trim().split('\n').sort()
    expect(files).toContain('package/dist/index.js')
    expect(files).toContain('package/dist/index.d.ts')
    expect(files).toContain('package/README.md')
    expect(files.filter((file) => !file.startsWith('package/dist/'))).toEqual(['package/README.md', 'package/package.json'])
    expect(readdirSync(join(app, 'node_modules'))).toEqual(['.package-lock.json', '@keygate'])
  })

  test('imports and delivers on Node.js and Bun', async () => {
    const { service, base, stop } = await listeningService()
    const businessId = await seedBusiness(service, 'Runtimes')
    const { key } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_WRITE'] })
    writeFileSync(join(app, 'smoke.mjs'), SMOKE)
    try {
      for (const [runtime, command] of Object.entries(RUNTIMES)) {
        const output = await run([...command, 'smoke.mjs'], app, { KEYGATE_URL: base, KEYGATE_KEY: key, RUNTIME: runtime })
        expect({ runtime, ...JSON.parse(output) }).toEqual({
          runtime,
          keyType: 'private',
          limit: 6000,
          refused: 'insufficient_scope',
          isError: true,
          stats: { queued: 0, committed: 150, dropped: 0 },
        })
      }
    } finally {
      await stop()
    }
    const stored = await queryRows<{ runtime: string; events: number; ids: number }>(
      (await testDatabase()).db,
      sql`select properties->>'runtime' as runtime, count(*)::int as events, count(distinct id)::int as ids
          from analytics_events where business_id = ${businessId} group by 1 order by 1`,
    )
    expect(stored).toEqual([
      { runtime: 'bun', events: 150, ids: 150 },
      { runtime: 'node', events: 150, ids: 150 },
    ])
  }, 60_000)

  test('the built module imports nothing and touches no Node.js global, so any runtime with fetch runs it', () => {
    const dist = join(app, 'node_modules/@keygate/client/dist')
    const modules = readdirSync(dist).filter((name) => name.endsWith('.js'))
    expect(modules).toContain('index.js')
    for (const name of modules) {
      const code = readFileSync(join(dist, name), 'utf8')
      const imported = [...code.matchAll(/(?:^|\s)(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!)
      expect({ name, outside: imported.filter((specifier) => !specifier.startsWith('./')) }).toEqual({ name, outside: [] })
      expect({
        name,
        nodeGlobals: code.match(/\b(?:process|Buffer|global)\.|\b(?:require|setImmediate|import)\(|\b__(?:dir|file)name\b/g) ?? [],
      }).toEqual({
        name,
        nodeGlobals: [],
      })
    }
  })

  test('the README example runs on Node.js', async () => {
    const { service, base, stop } = await listeningService()
    const businessId = await seedBusiness(service, 'Example')
    const { key } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_WRITE', 'AUDIENCE_PERSON_WRITE'] })
    cpSync(join(PACKAGE, 'examples/orders-worker.mjs'), join(app, 'orders-worker.mjs'))
    try {
      const output = await run(['node', 'orders-worker.mjs'], app, { KEYGATE_URL: base, KEYGATE_KEY: key })
      expect(output).toContain(`business ${businessId}`)
      expect(output).toContain('orders tracked: 3 committed, 0 dropped')
    } finally {
      await stop()
    }
  }, 60_000)

  test("a user's TypeScript type-checks against the installed declarations, and wrong calls do not", async () => {
    writeFileSync(
      join(app, 'user.ts'),
      `import { createClient, type ErrorCode, type KeygateClient } from '@keygate/client'

export async function user(client: KeygateClient): Promise<string | null> {
  const page = await client.listPeople({ limit: 10 })
  if (!page.ok) {
    const code: ErrorCode | 'network_error' | 'timeout' | 'aborted' | 'unexpected_response' = page.error.code
    return code
  }
  const emails: (string | null)[] = page.data.data.map((person) => person.email)
  const run = await client.triggerFlow({ id: 'f', idempotencyKey: 'order-1' }, { input: { orderId: 1 } })
  const runId: string | undefined = run.data?.runId
  const id: string = client.track({ eventType: 'order_paid', properties: { total: 1 } })
  return emails[0] ?? runId ?? id
}

export function refused(client: KeygateClient) {
  // @ts-expect-error: limit is an integer
  void client.listPeople({ limit: '10' })
  // @ts-expect-error: getPerson needs its id
  void client.getPerson()
  // @ts-expect-error: an event needs its eventType
  client.track({ properties: {} })
  // @ts-expect-error: no such operation
  void client.listEverything()
  // @ts-expect-error: a person has no nickname
  void client.upsertPeople({ email: 'a@example.com', nickname: 'A' })
  return createClient
}
`,
    )
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: [],
          strict: true,
          noEmit: true,
        },
        files: ['user.ts'],
      }),
    )
    expect(await run([join(BIN, 'tsc'), '-p', 'tsconfig.json'], app)).toBe('')
  }, 60_000)
})
