import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Service } from '../src/app.ts'
import { TEST_AUTHOR, ADMIN_TOKEN, admin, seedBusiness, seedKey, testService } from './support/service.ts'
import { addMember, cookieFrom, getPage, KEYS, PASSWORD, postForm, signIn, trySignIn } from './dashboard/support.ts'
import { createMemberService } from '../src/members/service.ts'
import { testDatabase } from './support/database.ts'
import type { KeyRecord } from '../src/keys/service.ts'

// The CLI runs as operators run it: a separate process talking HTTP to a real server.
let service: Service
let baseUrl: string
const repoRoot = join(import.meta.dir, '..')

beforeAll(async () => {
  service = await testService()
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  baseUrl = `http://127.0.0.1:${service.app.server!.port}`
})

afterAll(async () => {
  await service.app.server?.stop(true)
  await service.drain()
})

interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** `stdin`, when given, is piped to the CLI as its standard input. */
async function cli(args: string[], env: Record<string, string | undefined> = {}, stdin?: string): Promise<CliResult> {
  const child = Bun.spawn([process.execPath, 'src/cli.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, KEYGATE_URL: baseUrl, ADMIN_TOKEN, USER: 'ops-alice', ...env },
    stdin: stdin === undefined ? 'ignore' : new Blob([stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => child.kill(), 20_000)
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

async function cliJson<T>(args: string[], stdin?: string): Promise<T> {
  const result = await cli([...args, '--json'], {}, stdin)
  expect(result.stderr).toBe('')
  expect(result.code).toBe(0)
  return JSON.parse(result.stdout) as T
}

/** `whoami` through the listening server, as a browser or backend would call it. */
function whoami(key: string, origin?: string): Promise<Response> {
  return fetch(`${baseUrl}/api/v0/whoami`, {
    headers: { authorization: `Bearer ${key}`, ...(origin ? { origin } : {}) },
  })
}

/** A key as the admin API answers it; `key` only in the create answer. */
type KeyJson = KeyRecord & { key?: string }

const FULL_KEY = /\b[ps]k_[A-Za-z0-9]{20,40}\b/

describe('cli businesses', () => {
  test('create prints the new business and stores it', async () => {
    const result = await cli(['businesses', 'create', '--name', 'Acme Corp'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('Created business "Acme Corp".')
    const id = /^id\s+(\S+)$/m.exec(result.stdout)?.[1]
    const listed = (await (await admin(service, '/businesses')).json()) as { data: { id: string; name: string }[] }
    expect(listed.data).toEqual([expect.objectContaining({ id, name: 'Acme Corp' })])
  })

  test('list prints a table of the businesses', async () => {
    const acme = await seedBusiness(service, 'Acme')
    const globex = await seedBusiness(service, 'Globex')
    const result = await cli(['businesses', 'list'])
    expect(result.code).toBe(0)
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^ID\s+NAME\s+CREATED$/)
    expect(lines).toHaveLength(3)
    expect(result.stdout).toMatch(new RegExp(`${acme}\\s+Acme\\s`))
    expect(result.stdout).toMatch(new RegExp(`${globex}\\s+Globex\\s`))
  })

  test('list --json prints the server records', async () => {
    const acme = await seedBusiness(service, 'Acme')
    const page = await cliJson<unknown>(['businesses', 'list'])
    expect(page).toEqual({
      data: [{ id: acme, name: 'Acme', createdAt: expect.any(String), eventRetentionDays: null, effectiveEventRetentionDays: 400 }],
      nextCursor: null,
    })
  })
})

describe('cli keys create', () => {
  test('prints a public key once, with a warning, and the key answers whoami from its origin', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli([
      'keys',
      'create',
      '--business',
      businessId,
      '--type',
      'public',
      '--name',
      'Website',
      '--origin',
      'example.com',
      '--scope',
      'ANALYTICS_WRITE',
    ])
    expect(result.code).toBe(0)
    const keys = result.stdout.match(new RegExp(FULL_KEY, 'g')) ?? []
    expect(keys).toHaveLength(1)
    expect(keys[0]).toStartWith('pk_')
    expect(result.stdout).toContain('it will not be shown again')

    const response = await whoami(keys[0]!, 'https://www.example.com')
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ businessId, keyType: 'public', allowedOrigins: ['example.com'] })
  })

  test('--json answers the record with the key, created by the OS user', async () => {
    const businessId = await seedBusiness(service)
    const created = await cliJson<KeyJson>([
      'keys',
      'create',
      '--business',
      businessId,
      '--type',
      'private',
      '--name',
      'Backend',
      '--description',
      'nightly sync',
      '--scope',
      'ANALYTICS_READ,MEMORY_READ',
      '--scope',
      'BLOG_WRITE',
    ])
    expect(created).toMatchObject({
      businessId,
      type: 'private',
      name: 'Backend',
      description: 'nightly sync',
      allowedOrigins: [],
      expiresAt: null,
      createdBy: 'ops-alice',
    })
    expect([...created.scopes].sort()).toEqual(['ANALYTICS_READ', 'BLOG_WRITE', 'MEMORY_READ'])
    expect(created.key).toMatch(/^sk_[A-Za-z0-9]{36}$/)
    expect((await whoami(created.key!)).status).toBe(200)
  })

  test('--created-by and --expires are stored', async () => {
    const businessId = await seedBusiness(service)
    const expires = new Date(Date.now() + 86_400_000).toISOString()
    const created = await cliJson<KeyJson>([
      'keys',
      'create',
      '--business',
      businessId,
      '--type',
      'private',
      '--name',
      'Temp',
      '--scope',
      'ANALYTICS_READ',
      '--expires',
      expires,
      '--created-by',
      'deploy-bot',
    ])
    const stored = await service.services.keys.get(null, created.id)
    expect(stored.createdBy).toBe('deploy-bot')
    expect(stored.expiresAt?.toISOString()).toBe(expires)
  })

  test("a refused key prints the server's code and message on stderr and exits 1", async () => {
    const businessId = await seedBusiness(service)
    const result = await cli([
      'keys',
      'create',
      '--business',
      businessId,
      '--type',
      'public',
      '--name',
      'No origin',
      '--scope',
      'ANALYTICS_WRITE',
    ])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toStartWith('error: invalid_request: ')
    expect(result.stderr).toContain('allowedOrigins')
    expect(await service.services.keys.list(businessId)).toEqual([])
  })

  test('an unknown --type is a usage error (exit 2) and sends nothing', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(['keys', 'create', '--business', businessId, '--type', 'secret', '--name', 'X', '--scope', 'ANALYTICS_READ'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Usage: npm run cli -- keys create')
    expect(result.stderr).toContain('error: --type must be "public" or "private", not "secret".')
    expect(await service.services.keys.list(businessId)).toEqual([])
  })

  test('a missing required option is a usage error naming it', async () => {
    const result = await cli(['keys', 'create', '--type', 'private', '--name', 'X'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: keys create needs --business.')
  })
})

describe('cli keys list and show', () => {
  test('list prints hints, never a full key', async () => {
    const businessId = await seedBusiness(service)
    const web = await seedKey(service, businessId, { name: 'Web' })
    const backend = await seedKey(service, businessId, { type: 'private', name: 'Backend' })
    const result = await cli(['keys', 'list', '--business', businessId])
    expect(result.code).toBe(0)
    expect(result.stdout).not.toMatch(FULL_KEY)
    expect(result.stdout).toMatch(new RegExp(`${web.record.id}\\s+public\\s+Web\\s+pk_…${web.key.slice(-4)}\\s`))
    expect(result.stdout).toMatch(new RegExp(`${backend.record.id}\\s+private\\s+Backend\\s+sk_…${backend.key.slice(-4)}\\s`))
  })

  test('list --json carries no key', async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId)
    const result = await cli(['keys', 'list', '--business', businessId, '--json'])
    expect(result.stdout).not.toMatch(FULL_KEY)
    expect(JSON.parse(result.stdout)).toEqual({
      data: [expect.objectContaining({ id: record.id, keyHint: record.keyHint })],
      nextCursor: null,
    })
  })

  test('list of an unknown business answers not_found', async () => {
    const result = await cli(['keys', 'list', '--business', crypto.randomUUID()])
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: not_found: ')
  })

  test('show prints the key record without the key', async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId, { name: 'Web', allowedOrigins: ['example.com', 'localhost:3000'] })
    const result = await cli(['keys', 'show', record.id])
    expect(result.code).toBe(0)
    expect(result.stdout).not.toMatch(FULL_KEY)
    expect(result.stdout).toMatch(/^name\s+Web$/m)
    expect(result.stdout).toMatch(/^origins\s+example\.com, localhost:3000$/m)
    expect(result.stdout).toMatch(/^status\s+active$/m)
    expect(result.stdout).toMatch(new RegExp(`^key\\s+${record.keyHint} \\(hint only\\)$`, 'm'))
  })

  test('show takes exactly one key id', async () => {
    const result = await cli(['keys', 'show'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: keys show takes one KEY_ID.')
  })
})

describe('cli keys update', () => {
  test('replaces origins and scopes, effective on the next request', async () => {
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { allowedOrigins: ['example.com'] })
    expect((await whoami(key, 'https://app.other.org')).status).toBe(403)

    const updated = await cliJson<KeyJson>([
      'keys',
      'update',
      record.id,
      '--name',
      'Renamed',
      '--origin',
      'https://app.other.org',
      '--scope',
      'BLOG_READ',
    ])
    expect(updated).toMatchObject({ name: 'Renamed', allowedOrigins: ['https://app.other.org'], scopes: ['BLOG_READ'] })
    expect((await whoami(key, 'https://app.other.org')).status).toBe(200)
    expect((await whoami(key, 'https://www.example.com')).status).toBe(403)
  })

  test('--allow-ip and --ip-policy restrict a private key by client address; --allow-ip "" clears the list', async () => {
    const businessId = await seedBusiness(service)
    const created = await cliJson<KeyJson>([
      'keys',
      'create',
      '--business',
      businessId,
      '--type',
      'private',
      '--name',
      'Backend',
      '--scope',
      'ANALYTICS_READ',
      '--allow-ip',
      '203.0.113.7',
      '--allow-ip',
      '2001:DB8::/32',
    ])
    expect(created).toMatchObject({ allowedIps: ['203.0.113.7', '2001:db8::/32'], ipPolicy: 'enforce' })
    // The CLI's server listens on 127.0.0.1, outside the list.
    expect((await whoami(created.key!)).status).toBe(403)
    const reported = await cli(['keys', 'update', created.id, '--ip-policy', 'report'])
    expect(reported.code).toBe(0)
    expect(reported.stdout).toMatch(/^IP policy\s+report only/m)
    expect((await whoami(created.key!)).status).toBe(200)
    const cleared = await cliJson<KeyJson>(['keys', 'update', created.id, '--allow-ip', ''])
    expect(cleared.allowedIps).toEqual([])
    const refused = await cli(['keys', 'update', created.id, '--allow-ip', '198.51.100.7/24'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('198.51.100.0/24')
    expect((await cli(['keys', 'update', created.id, '--ip-policy', 'sometimes'])).code).toBe(2)
  })

  test('--expires never clears the expiry and an empty --description clears it', async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId, {
      type: 'private',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    })
    await service.services.keys.update(null, record.id, { description: 'old' }, TEST_AUTHOR)
    const result = await cli(['keys', 'update', record.id, '--expires', 'never', '--description', ''])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^expires\s+never$/m)
    const stored = await service.services.keys.get(null, record.id)
    expect(stored.expiresAt).toBeNull()
    expect(stored.description).toBeNull()
  })

  test("--rate-limit sets the key's budget, default gives it back to the service default, and a bad value is a usage error", async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId, { type: 'private' })
    const set = await cli(['keys', 'update', record.id, '--rate-limit', '100/60'])
    expect(set.code).toBe(0)
    expect(set.stdout).toMatch(/^rate limit\s+100 per 60 s$/m)
    expect((await service.services.keys.get(null, record.id)).rateLimitLimit).toBe(100)
    const reset = await cliJson<KeyJson>(['keys', 'update', record.id, '--rate-limit', 'default'])
    expect(reset).toMatchObject({ rateLimit: null })
    const bad = await cli(['keys', 'update', record.id, '--rate-limit', '100 per minute'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--rate-limit takes REQUESTS/SECONDS')
  })

  test('without any change is a usage error', async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId)
    const result = await cli(['keys', 'update', record.id])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('keys update needs at least one change')
  })

  test('a past expiry is refused by the server with exit 1', async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId)
    const result = await cli(['keys', 'update', record.id, '--expires', '2020-01-01T00:00:00Z'])
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: invalid_request: ')
    expect((await service.services.keys.get(null, record.id)).expiresAt).toBeNull()
  })
})

describe('cli keys revoke', () => {
  test('revokes: the key is refused on its next request and the record is kept', async () => {
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { type: 'private' })
    expect((await whoami(key)).status).toBe(200)

    const result = await cli(['keys', 'revoke', record.id])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^status\s+revoked \d{4}-/m)

    const response = await whoami(key)
    expect(response.status).toBe(401)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key')
    expect((await service.services.keys.get(null, record.id)).revokedAt).toBeInstanceOf(Date)
  })

  test('--json answers the revoked record', async () => {
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId)
    const revoked = await cliJson<KeyJson>(['keys', 'revoke', record.id])
    expect(revoked).toMatchObject({ id: record.id, revokedAt: expect.any(String) })
    expect(revoked.key).toBeUndefined()
  })
})

describe('cli webhooks', () => {
  test('create (the secret printed once), list, test, deliveries, resend, update, delete', async () => {
    // A service that may call a receiver on loopback (WEBHOOK_ALLOWED_HOSTS).
    const hooks = await testService({ webhooks: { allowedHosts: ['127.0.0.1'], everyMs: 3_600_000 } })
    hooks.app.listen({ port: 0, hostname: '127.0.0.1' })
    const received: string[] = []
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        received.push(request.headers.get('webhook-id')!)
        await request.text()
        return new Response('ok')
      },
    })
    try {
      const env = { KEYGATE_URL: `http://127.0.0.1:${hooks.app.server!.port}` }
      const json = async <T>(args: string[]): Promise<T> => {
        const result = await cli([...args, '--json'], env)
        expect(result.stderr).toBe('')
        expect(result.code).toBe(0)
        return JSON.parse(result.stdout) as T
      }
      const businessId = await seedBusiness(hooks)
      const url = `http://127.0.0.1:${receiver.port}/hooks`
      const created = await cli(
        ['webhooks', 'create', '--business', businessId, '--receiver', url, '--events', 'key.created,key.revoked'],
        env,
      )
      expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' })
      const secret = /whsec_[A-Za-z0-9+/=]+/.exec(created.stdout)?.[0]
      expect(secret).toBeDefined()
      const [endpoint] = await json<{ id: string; url: string; events: string[] }[]>(['webhooks', 'list', '--business', businessId])
      expect(endpoint).toMatchObject({ url, events: ['key.created', 'key.revoked'] })
      expect((await cli(['webhooks', 'list', '--business', businessId], env)).stdout).not.toContain(secret!)
      const sent = await json<{ eventId: string }>(['webhooks', 'test', endpoint!.id, '--business', businessId])
      await hooks.services.webhookDelivery.run()
      expect(received).toEqual([sent.eventId])
      const [delivery] = await json<{ id: string; event: string; status: string }[]>([
        'webhooks',
        'deliveries',
        endpoint!.id,
        '--business',
        businessId,
      ])
      expect(delivery).toMatchObject({ event: 'webhook.test', status: 'delivered' })
      expect((await cli(['webhooks', 'resend', delivery!.id, '--business', businessId, '--endpoint', endpoint!.id], env)).code).toBe(0)
      await hooks.services.webhookDelivery.run()
      expect(received).toEqual([sent.eventId, sent.eventId])
      const disabled = await json<{ enabled: boolean }>([
        'webhooks',
        'update',
        endpoint!.id,
        '--business',
        businessId,
        '--enabled',
        'false',
      ])
      expect(disabled.enabled).toBe(false)
      const wrong = await cli(['webhooks', 'update', endpoint!.id, '--business', businessId, '--enabled', 'maybe'], env)
      expect(wrong.code).toBe(2)
      expect((await cli(['webhooks', 'delete', endpoint!.id, '--business', businessId], env)).code).toBe(0)
      expect(await json<unknown[]>(['webhooks', 'list', '--business', businessId])).toEqual([])
      // A refused address is the API's 400, printed with the reason.
      const refused = await cli(
        ['webhooks', 'create', '--business', businessId, '--receiver', 'https://10.0.0.1/x', '--events', 'key.created'],
        env,
      )
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain('private')
    } finally {
      receiver.stop(true)
      await hooks.app.server?.stop(true)
    }
  }, 60_000)
})

describe('cli flows create', () => {
  test('creates a flow of the business', async () => {
    const businessId = await seedBusiness(service)
    const flow = await cliJson<{ id: string; businessId: string; name: string }>([
      'flows',
      'create',
      '--business',
      businessId,
      '--name',
      'Welcome series',
    ])
    expect(flow).toMatchObject({ businessId, name: 'Welcome series' })
    expect(flow.id).toMatch(/^[0-9a-f-]{36}$/)
  })
})

describe('cli flows list and runs', () => {
  async function flowWithTriggers(runs: number) {
    const businessId = await seedBusiness(service)
    const flow = await cliJson<{ id: string }>(['flows', 'create', '--business', businessId, '--name', 'Welcome'])
    const { key, record } = await seedKey(service, businessId, { type: 'private', scopes: ['FLOW_TRIGGER'] })
    const runIds: string[] = []
    for (let i = 0; i < runs; i++) {
      const response = await fetch(`${baseUrl}/api/v0/flow/${flow.id}/trigger`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `order-${i}` },
        body: JSON.stringify({ input: { order: i } }),
      })
      expect(response.status).toBe(202)
      runIds.push(((await response.json()) as { runId: string }).runId)
    }
    return { businessId, flowId: flow.id, keyId: record.id, runIds }
  }

  test('flows list prints a table of the flows, newest first', async () => {
    const { businessId, flowId } = await flowWithTriggers(0)
    const churn = await cliJson<{ id: string }>(['flows', 'create', '--business', businessId, '--name', 'Churn'])
    const result = await cli(['flows', 'list', '--business', businessId])
    expect(result.code).toBe(0)
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^ID\s+NAME\s+CREATED$/)
    expect(lines[1]).toMatch(new RegExp(`^${churn.id}\\s+Churn\\s+\\d{4}-`))
    expect(lines[2]).toMatch(new RegExp(`^${flowId}\\s+Welcome\\s+\\d{4}-`))
    expect(lines).toHaveLength(3)
  })

  test('flows list --json keeps the server envelope', async () => {
    const { businessId, flowId } = await flowWithTriggers(0)
    expect(await cliJson(['flows', 'list', '--business', businessId])).toEqual({
      data: [{ id: flowId, businessId, name: 'Welcome', createdAt: expect.any(String) }],
      nextCursor: null,
    })
  })

  test('flows runs prints the runs of a flow, newest first, with status, key and idempotency key', async () => {
    const { flowId, keyId, runIds } = await flowWithTriggers(2)
    const result = await cli(['flows', 'runs', flowId])
    expect(result.code).toBe(0)
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+KEY ID\s+IDEMPOTENCY KEY\s+CREATED$/)
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(runIds.toReversed())
    expect(lines[1]).toMatch(new RegExp(`^${runIds[1]}\\s+queued\\s+${keyId}\\s+order-1\\s+\\d{4}-`))
  })

  test('flows runs --json carries each run with its input', async () => {
    const { flowId, runIds } = await flowWithTriggers(1)
    const page = await cliJson<{ data: { id: string; input: unknown }[]; nextCursor: string | null }>(['flows', 'runs', flowId])
    expect(page).toEqual({ data: [expect.objectContaining({ id: runIds[0], input: { order: 0 } })], nextCursor: null })
  })

  test('flows runs of an unknown flow exits 1 with not_found', async () => {
    const result = await cli(['flows', 'runs', crypto.randomUUID()])
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: not_found: No flow with id')
  })

  test('flows runs without a flow id is a usage error', async () => {
    const result = await cli(['flows', 'runs'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: flows runs takes one FLOW_ID.')
  })
})

describe('cli list paging', () => {
  test('--limit shows a page and ends with the npm command for the next one, which shows the rest', async () => {
    const { flowId, runIds } = await (async () => {
      const businessId = await seedBusiness(service)
      const flow = await cliJson<{ id: string }>(['flows', 'create', '--business', businessId, '--name', 'Welcome'])
      const { key } = await seedKey(service, businessId, { type: 'private', scopes: ['FLOW_TRIGGER'] })
      const ids: string[] = []
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${baseUrl}/api/v0/flow/${flow.id}/trigger`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
        })
        ids.push(((await response.json()) as { runId: string }).runId)
      }
      return { flowId: flow.id, runIds: ids }
    })()
    const first = await cli(['flows', 'runs', flowId, '--limit', '2'])
    expect(first.code).toBe(0)
    const more = /^More: npm run cli -- flows runs (\S+) --limit 2 --cursor ([A-Za-z0-9_-]+)$/m.exec(first.stdout)
    expect(more?.[1]).toBe(flowId)
    expect(first.stdout).toContain(runIds[2]!)
    expect(first.stdout).toContain(runIds[1]!)
    expect(first.stdout).not.toContain(runIds[0]!)
    const second = await cli(['flows', 'runs', flowId, '--limit', '2', '--cursor', more![2]!])
    expect(second.code).toBe(0)
    expect(second.stdout).toContain(runIds[0]!)
    expect(second.stdout).not.toContain(runIds[1]!)
    expect(second.stdout).not.toContain('More:')
  })

  test('--json carries nextCursor, and --cursor passes it back', async () => {
    // Newest first: B is made a second later, so no tie of the clock decides the order by id.
    const a = await seedBusiness(service, 'A', new Date(Date.now() - 1000))
    const b = await seedBusiness(service, 'B')
    const first = await cliJson<{ data: { id: string }[]; nextCursor: string }>(['businesses', 'list', '--limit', '1'])
    expect(first.data.map((x) => x.id)).toEqual([b])
    expect(first.nextCursor).toMatch(/^[A-Za-z0-9_-]+$/)
    const second = await cliJson(['businesses', 'list', '--limit', '1', '--cursor', first.nextCursor])
    expect(second).toEqual({ data: [expect.objectContaining({ id: a })], nextCursor: null })
  })

  test('keys list and members list take --limit too', async () => {
    const businessId = await seedBusiness(service)
    await seedKey(service, businessId, { name: 'One' })
    await seedKey(service, businessId, { name: 'Two' })
    await addMember(businessId, { email: 'ada@example.com' })
    await addMember(businessId, { email: 'bob@example.com' })
    const keys = await cliJson<{ data: { name: string }[]; nextCursor: string | null }>([
      'keys',
      'list',
      '--business',
      businessId,
      '--limit',
      '1',
    ])
    expect(keys.data.map((k) => k.name)).toEqual(['Two'])
    expect(keys.nextCursor).not.toBeNull()
    const people = await cli(['members', 'list', '--business', businessId, '--limit', '1'])
    expect(people.stdout).toContain('ada@example.com')
    expect(people.stdout).not.toContain('bob@example.com')
    expect(people.stdout).toMatch(new RegExp(`^More: npm run cli -- members list --business ${businessId} --limit 1 --cursor \\S+$`, 'm'))
  })

  test('a --limit out of range is refused by the server naming limit (exit 1)', async () => {
    const result = await cli(['businesses', 'list', '--limit', '5000'])
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: invalid_request: ')
    expect(result.stderr).toContain('"limit"')
  })
})

interface MemberJson {
  id: string
  businessId: string
  email: string
  role: string
  passwordSet: boolean
  pending: boolean
  createdAt: string
  signInLink?: { url: string; expiresAt: string }
}

const SIGN_IN_LINK = /http:\/\/\S+\/dashboard\/sign-in\/link\?token=\S+/g

/** The one sign-in link in the CLI's output; fails the test unless there is exactly one. */
function linkIn(stdout: string): string {
  const links = stdout.match(SIGN_IN_LINK) ?? []
  expect(links).toHaveLength(1)
  return links[0]!
}

/** What the member's browser sees on opening a sign-in link. */
async function openLink(url: string): Promise<{ status: number; page: string }> {
  const response = await fetch(url)
  return { status: response.status, page: await response.text() }
}

async function storedMembers(businessId: string): Promise<MemberJson[]> {
  const response = await admin(service, `/businesses/${businessId}/members`)
  return ((await response.json()) as { data: MemberJson[] }).data
}

describe('cli members create', () => {
  test('without a password prints a one-time sign-in link once, with its expiry, that opens the set-password page', async () => {
    const businessId = await seedBusiness(service, 'Acme')
    const result = await cli(['members', 'create', '--business', businessId, '--email', 'Ada@Example.com', '--role', 'owner'])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
    expect(result.stdout).toContain('Created owner ada@example.com.')
    expect(result.stdout).toMatch(/^password\s+not set yet/m)
    const expires = /^expires\s+(\S+)$/m.exec(result.stdout)?.[1]
    expect(Date.parse(expires!)).toBeGreaterThan(Date.now())
    expect(result.stdout).toContain(`it is shown once, works once, and expires at ${expires}.`)

    const { status, page } = await openLink(linkIn(result.stdout))
    expect(status).toBe(200)
    expect(page).toContain('Choose a password')
    expect(page).toContain('ada@example.com')
    expect(await storedMembers(businessId)).toEqual([
      expect.objectContaining({ email: 'ada@example.com', role: 'owner', passwordSet: false }),
    ])
  })

  test('--json answers the member with its sign-in link; --role defaults to member', async () => {
    const businessId = await seedBusiness(service)
    const created = await cliJson<MemberJson>(['members', 'create', '--business', businessId, '--email', 'bob@example.com'])
    expect(created).toMatchObject({ businessId, email: 'bob@example.com', role: 'member', passwordSet: false })
    expect(created.signInLink!.url).toStartWith(`${baseUrl}/dashboard/sign-in/link?token=`)
    expect(Date.parse(created.signInLink!.expiresAt)).toBeGreaterThan(Date.now())
    expect((await openLink(created.signInLink!.url)).status).toBe(200)
  })

  test('--password-stdin reads the password from standard input, prints no link and never the password', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(
      ['members', 'create', '--business', businessId, '--email', 'ada@example.com', '--password-stdin'],
      {},
      `${PASSWORD}\n`,
    )
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^password\s+set$/m)
    expect(result.stdout).not.toMatch(SIGN_IN_LINK)
    expect(result.stdout + result.stderr).not.toContain(PASSWORD)
    // The trailing newline of `echo` is not part of the password.
    const response = await trySignIn(service, 'ada@example.com', PASSWORD)
    expect(response.status).toBe(303)
    expect(cookieFrom(response, 'keygate_session')).toStartWith('keygate_session=')
  })

  test('--password-stdin --json answers no password and no link', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(
      ['members', 'create', '--business', businessId, '--email', 'ada@example.com', '--password-stdin', '--json'],
      {},
      PASSWORD,
    )
    expect(result.code).toBe(0)
    expect(result.stdout).not.toContain(PASSWORD)
    const created = JSON.parse(result.stdout) as MemberJson
    expect(created).toMatchObject({ email: 'ada@example.com', passwordSet: true })
    expect(Object.keys(created).sort()).toEqual(['businessId', 'createdAt', 'email', 'id', 'passwordSet', 'pending', 'role'])
    expect(created.pending).toBe(false)
  })

  test('a password given as an argument is refused (exit 2) without echoing it, and nothing is created', async () => {
    const businessId = await seedBusiness(service)
    for (const args of [['--password', PASSWORD], [`--password=${PASSWORD}`]]) {
      const result = await cli(['members', 'create', '--business', businessId, '--email', 'ada@example.com', ...args])
      expect(result.code).toBe(2)
      expect(result.stdout).toBe('')
      expect(result.stderr).toContain('error: members create takes no --password')
      expect(result.stderr).toContain('--password-stdin')
      expect(result.stderr).not.toContain(PASSWORD)
    }
    expect(await storedMembers(businessId)).toEqual([])
  })

  test('--password-stdin with nothing on standard input is a usage error', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(['members', 'create', '--business', businessId, '--email', 'ada@example.com', '--password-stdin'], {}, '\n')
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: --password-stdin read no password from standard input.')
    expect(await storedMembers(businessId)).toEqual([])
  })

  test('a too short password is refused by the server (exit 1) without echoing it', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(
      ['members', 'create', '--business', businessId, '--email', 'ada@example.com', '--password-stdin'],
      {},
      'tiny-secret\n',
    )
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toStartWith('error: invalid_request: ')
    expect(result.stderr).toContain('password')
    expect(result.stderr).not.toContain('tiny-secret')
    expect(await storedMembers(businessId)).toEqual([])
  })

  test('an unknown --role is a usage error and sends nothing', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(['members', 'create', '--business', businessId, '--email', 'ada@example.com', '--role', 'admin'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Usage: npm run cli -- members create')
    expect(result.stderr).toContain('error: --role must be "owner" or "member", not "admin".')
    expect(await storedMembers(businessId)).toEqual([])
  })

  test('an email that is already a member answers conflict with exit 1', async () => {
    const businessId = await seedBusiness(service)
    await addMember(businessId, { email: 'ada@example.com' })
    const result = await cli(['members', 'create', '--business', businessId, '--email', 'ADA@example.com'])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toStartWith('error: conflict: ')
    expect(result.stderr).toContain('ada@example.com is already a member of Acme.')
    expect(await storedMembers(businessId)).toHaveLength(1)
  })

  test("a member of another business gets a pending membership here and an operator's link, which resets the password", async () => {
    const acme = await seedBusiness(service)
    const rival = await seedBusiness(service, 'Rival')
    await addMember(acme, { email: 'ada@example.com' })
    const result = await cli(['members', 'create', '--business', rival, '--email', 'ada@example.com', '--role', 'owner'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('Created owner ada@example.com.')
    expect(result.stdout).toMatch(/^status\s+pending: joins by the sign-in link$/m)
    expect(await storedMembers(rival)).toEqual([
      expect.objectContaining({ email: 'ada@example.com', role: 'owner', passwordSet: true, pending: true }),
    ])
    // Pending: her password still opens Acme only.
    const session = await signIn(service, 'ada@example.com')
    expect(await (await getPage(service, KEYS, session)).text()).not.toContain('Rival')
    // An operator's link may set a new password (recovery): the page asks for one, not for hers.
    const { status, page } = await openLink(linkIn(result.stdout))
    expect(status).toBe(200)
    expect(page).toContain('Choose a password')
  })

  test('a missing --email is a usage error naming it', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(['members', 'create', '--business', businessId])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: members create needs --email.')
  })
})

describe('cli members list', () => {
  test('prints a table of id, email, role, status and created, and no password', async () => {
    const businessId = await seedBusiness(service)
    const ada = await addMember(businessId, { email: 'ada@example.com', role: 'owner' })
    const bob = await addMember(businessId, { email: 'bob@example.com', role: 'member' })
    const cy = await addMember(businessId, { email: 'cy@example.com', role: 'member', password: null })
    const other = await seedBusiness(service, 'Other')
    await addMember(other, { email: 'eve@example.com' })
    const result = await cli(['members', 'list', '--business', businessId])
    expect(result.code).toBe(0)
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^ID\s+EMAIL\s+ROLE\s+STATUS\s+CREATED$/)
    expect(lines).toHaveLength(4)
    expect(result.stdout).toMatch(new RegExp(`^${ada.id}\\s+ada@example\\.com\\s+owner\\s+joined\\s+\\d{4}-\\d\\d-\\d\\dT\\S+Z$`, 'm'))
    expect(result.stdout).toMatch(new RegExp(`^${bob.id}\\s+bob@example\\.com\\s+member\\s+joined\\s+\\d{4}-`, 'm'))
    // Added without a password: pending until the link is used.
    expect(result.stdout).toMatch(new RegExp(`^${cy.id}\\s+cy@example\\.com\\s+member\\s+pending\\s+\\d{4}-`, 'm'))
    expect(result.stdout).not.toContain('eve@example.com')
    expect(result.stdout).not.toContain(PASSWORD)
    expect(result.stdout).not.toContain('$argon2')
  })

  test('--json prints the member records without password hashes', async () => {
    const businessId = await seedBusiness(service)
    const ada = await addMember(businessId, { email: 'ada@example.com' })
    const listed = await cliJson<unknown>(['members', 'list', '--business', businessId])
    expect(listed).toEqual({
      data: [
        {
          id: ada.id,
          businessId,
          email: 'ada@example.com',
          role: 'owner',
          passwordSet: true,
          pending: false,
          createdAt: expect.any(String),
        },
      ],
      nextCursor: null,
    })
  })

  test('a business without members says so', async () => {
    const businessId = await seedBusiness(service)
    const result = await cli(['members', 'list', '--business', businessId])
    expect(result.code).toBe(0)
    expect(result.stdout.trim()).toBe('No members.')
  })
})

describe('cli members link', () => {
  test('prints a new one-time link, shown once with its expiry, that opens the set-password page', async () => {
    const businessId = await seedBusiness(service, 'Acme')
    const ada = await addMember(businessId, { email: 'ada@example.com' })
    const result = await cli(['members', 'link', ada.id])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`New sign-in link for member ${ada.id}.`)
    const expires = /^expires\s+(\S+)$/m.exec(result.stdout)?.[1]
    expect(result.stdout).toContain(`it is shown once, works once, and expires at ${expires}.`)
    const { status, page } = await openLink(linkIn(result.stdout))
    expect(status).toBe(200)
    expect(page).toContain('Choose a password')
    expect(page).toContain('ada@example.com')
  })

  test("is an operator's recovery: the link sets a new password over hers, ending every session and other link of the account", async () => {
    const businessId = await seedBusiness(service, 'Acme')
    const ada = await addMember(businessId, { email: 'ada@example.com' })
    const session = await signIn(service, 'ada@example.com')
    const pendingElsewhere = await createMemberService((await testDatabase()).db).create(
      await seedBusiness(service, 'Other'),
      { email: 'ada@example.com', role: 'member' },
      TEST_AUTHOR,
      'member',
    )
    const token = new URL(linkIn((await cli(['members', 'link', ada.id])).stdout)).searchParams.get('token')!
    const chosen = await postForm(service, '/dashboard/sign-in/link', { token, password: `${PASSWORD} 2`, confirm: `${PASSWORD} 2` })
    expect(chosen.status).toBe(303)
    expect((await getPage(service, KEYS, session)).status).toBe(303)
    expect((await openLink(`${baseUrl}/dashboard/sign-in/link?token=${pendingElsewhere.signInLink!.token}`)).status).toBe(410)
    expect((await trySignIn(service, 'ada@example.com', PASSWORD)).status).toBe(401)
    expect((await trySignIn(service, 'ada@example.com', `${PASSWORD} 2`)).status).toBe(303)
  })

  test('--json answers the link', async () => {
    const businessId = await seedBusiness(service)
    const ada = await addMember(businessId)
    const answer = await cliJson<{ signInLink: { url: string; expiresAt: string } }>(['members', 'link', ada.id])
    expect(answer.signInLink.url).toStartWith(`${baseUrl}/dashboard/sign-in/link?token=`)
    expect(Date.parse(answer.signInLink.expiresAt)).toBeGreaterThan(Date.now())
    expect((await openLink(answer.signInLink.url)).status).toBe(200)
  })

  test('an unknown member answers not_found with exit 1', async () => {
    const result = await cli(['members', 'link', crypto.randomUUID()])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toStartWith('error: not_found: ')
  })

  test('takes exactly one member id', async () => {
    const result = await cli(['members', 'link'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: members link takes one MEMBER_ID.')
  })
})

describe('cli members remove', () => {
  test('removes the member: gone from members list, their session and sign-in link end', async () => {
    const businessId = await seedBusiness(service)
    const ada = await addMember(businessId, { email: 'ada@example.com' })
    const bob = await addMember(businessId, { email: 'bob@example.com', role: 'member' })
    const signedIn = await trySignIn(service, 'ada@example.com', PASSWORD)
    const cookie = cookieFrom(signedIn, 'keygate_session')!
    expect((await getPage(service, KEYS, { cookie })).status).toBe(200)
    const link = linkIn((await cli(['members', 'link', ada.id])).stdout)

    const result = await cli(['members', 'remove', ada.id])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
    expect(result.stdout).toContain(`Removed member ${ada.id}`)

    const listed = await cli(['members', 'list', '--business', businessId])
    expect(listed.stdout).not.toContain(ada.id)
    expect(listed.stdout).toContain(bob.id)
    const afterRemoval = await getPage(service, KEYS, { cookie })
    expect(afterRemoval.status).toBe(303)
    expect(afterRemoval.headers.get('location')).toStartWith('/dashboard/sign-in?')
    expect((await openLink(link)).status).toBe(410)
  })

  test('--json acknowledges the removal', async () => {
    const businessId = await seedBusiness(service)
    const ada = await addMember(businessId)
    expect(await cliJson(['members', 'remove', ada.id])).toEqual({ id: ada.id, removed: true })
    expect(await storedMembers(businessId)).toEqual([])
  })

  test('an unknown member answers not_found with exit 1', async () => {
    const result = await cli(['members', 'remove', crypto.randomUUID()])
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: not_found: ')
  })
})

describe('cli connection and usage', () => {
  test('--url and --token take precedence over the environment', async () => {
    await seedBusiness(service, 'Acme')
    const result = await cli(['businesses', 'list', '--url', baseUrl, '--token', ADMIN_TOKEN], {
      KEYGATE_URL: 'http://127.0.0.1:1',
      ADMIN_TOKEN: 'wrong-token-0123456789',
    })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('Acme')
  })

  test('a wrong admin token prints unauthorized and exits 1', async () => {
    const result = await cli(['businesses', 'list'], { ADMIN_TOKEN: 'wrong-token-0123456789' })
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: unauthorized: ')
  })

  test('no admin token at all is a usage error', async () => {
    const result = await cli(['businesses', 'list'], { ADMIN_TOKEN: undefined })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: No admin token')
  })

  test('an unreachable server exits 1 naming the URL', async () => {
    const result = await cli(['businesses', 'list'], { KEYGATE_URL: 'http://127.0.0.1:1' })
    expect(result.code).toBe(1)
    expect(result.stderr).toStartWith('error: cannot reach keygate at http://127.0.0.1:1')
  })

  test('help prints every command on stdout', async () => {
    const result = await cli(['help'])
    expect(result.code).toBe(0)
    for (const command of [
      'businesses create',
      'businesses list',
      'keys create',
      'keys list',
      'keys show',
      'keys update',
      'keys revoke',
      'keys roll',
      'keys usage',
      'keys audit',
      'businesses audit',
      'businesses identity-secret',
      'flows create',
      'flows list',
      'flows runs',
      'members create',
      'members list',
      'members link',
      'members remove',
      'webhooks create',
      'webhooks list',
      'webhooks update',
      'webhooks delete',
      'webhooks test',
      'webhooks deliveries',
      'webhooks resend',
    ]) {
      expect(result.stdout).toContain(`  ${command}`)
    }
  })

  test('an unknown command exits 2 with the help', async () => {
    const result = await cli(['keys', 'rotate', 'x'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Commands:')
    expect(result.stderr).toContain('error: Unknown command "keys rotate".')
  })

  test('an unknown option exits 2', async () => {
    const result = await cli(['businesses', 'list', '--all'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("error: Unknown option '--all'.")
  })
})

describe('cli: rolling, usage, the audit trail and the identity secret', () => {
  test('keys roll --grace 1h prints the new key once; the old one works until the grace ends', async () => {
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const before = Date.now()
    const rolled = await cliJson<{ id: string; key: string; rolledFrom: string }>(['keys', 'roll', record.id, '--grace', '1h'])
    expect(rolled.rolledFrom).toBe(record.id)
    expect((await whoami(rolled.key)).status).toBe(200)
    expect((await whoami(key)).status).toBe(200)
    const old = await cliJson<{ replacedBy: string; expiresAt: string }>(['keys', 'show', record.id])
    expect(old.replacedBy).toBe(rolled.id)
    expect(Date.parse(old.expiresAt) - before).toBeGreaterThanOrEqual(3_600_000 - 1_000)
    expect(Date.parse(old.expiresAt) - before).toBeLessThanOrEqual(3_600_000 + 60_000)
    const text = await cli(['keys', 'roll', rolled.id, '--grace', '0'])
    expect(text.code).toBe(0)
    expect(text.stdout).toContain('Save this key now')
    expect((await whoami(rolled.key)).status).toBe(401)
    const other = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    const beforeDefault = Date.now()
    await cliJson(['keys', 'roll', other.record.id])
    const graced = await cliJson<{ expiresAt: string }>(['keys', 'show', other.record.id])
    // No --grace: the server's default of a day.
    expect(Date.parse(graced.expiresAt) - beforeDefault).toBeGreaterThanOrEqual(86_400_000 - 1_000)
    expect(Date.parse(graced.expiresAt) - beforeDefault).toBeLessThanOrEqual(86_400_000 + 60_000)
    const bad = await cli(['keys', 'roll', rolled.id, '--grace', 'soon'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--grace')
  })

  test('keys usage, keys audit and businesses audit read what the service recorded', async () => {
    const businessId = await seedBusiness(service)
    const { key, record } = await seedKey(service, businessId, { type: 'private', scopes: ['ANALYTICS_READ'] })
    expect((await whoami(key)).status).toBe(200)
    await service.services.usage.flush()
    const usage = await cliJson<{ series: { accepted: number }[] }>(['keys', 'usage', record.id])
    expect(usage.series.reduce((sum, point) => sum + point.accepted, 0)).toBe(1)
    const usageText = await cli(['keys', 'usage', record.id, '--interval', 'day'])
    expect(usageText.stdout).toMatch(/^accepted\s+1$/m)
    expect((await cli(['keys', 'update', record.id, '--name', 'Renamed'])).code).toBe(0)
    const trail = await cliJson<{ data: { action: string; actor: string }[] }>(['keys', 'audit', record.id])
    expect(trail.data.map((entry) => entry.action)).toEqual(['key.updated', 'key.created'])
    expect(trail.data[0]!.actor).toBe('admin')
    const text = await cli(['businesses', 'audit', '--business', businessId])
    expect(text.stdout).toContain('name: private key -> Renamed')
  })

  test('businesses identity-secret prints a new secret each time', async () => {
    const businessId = await seedBusiness(service)
    const first = await cliJson<{ secret: string }>(['businesses', 'identity-secret', '--business', businessId])
    const second = await cliJson<{ secret: string }>(['businesses', 'identity-secret', '--business', businessId])
    expect(first.secret).toMatch(/^ids_[0-9a-f]{64}$/)
    expect(second.secret).not.toBe(first.secret)
  })
})
