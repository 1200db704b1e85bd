import { afterAll, describe, expect, test } from 'bun:test'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { generateTypes } from '../../tools/openapi-client/generate.ts'
import { call, seedBusiness, seedKey, testService } from '../support/service.ts'

const ROOT = resolve(import.meta.dir, '../..')
// Inside the repository (its /tmp is ignored), so `openapi-fetch` resolves as it would in
// a backend developer's project.
await mkdir(join(ROOT, 'tmp'), { recursive: true })
const workDir = await mkdtemp(join(ROOT, 'tmp', 'openapi-client-'))

afterAll(() => rm(workDir, { recursive: true, force: true }))

/**
 * What a backend developer writes against the generated types. The `@ts-expect-error`
 * lines pin what the types must refuse: were `limit` text, an error code any string, or a
 * scope any string, the directive would be unused and tsc would fail.
 */
const CLIENT = `import createClient from 'openapi-fetch'
import type { components, paths } from './api.ts'

type ErrorCode = components['schemas']['ErrorCode']

export async function backendDeveloper(baseUrl: string, fetch: typeof globalThis.fetch, key: string) {
  const client = createClient<paths>({ baseUrl, fetch, headers: { Authorization: \`Bearer \${key}\` } })

  const me = await client.GET('/api/v0/whoami')
  if (me.error) throw new Error(me.error.error.message)
  const businessId: string = me.data.businessId
  const origin: string | null = me.data.origin

  const written = await client.POST('/api/v0/audience/people', {
    body: { people: [{ email: 'ada@example.com', firstName: 'Ada' }, { email: 'grace@example.com', lastName: 'Hopper' }] },
  })
  if (written.error) throw new Error(written.error.error.code)
  const upserted: number = written.data.upserted

  const page = await client.GET('/api/v0/audience/people', { params: { query: { limit: 1 } } })
  if (page.error) throw new Error(page.error.error.code)
  const next: string | null = page.data.nextCursor
  const emails = page.data.data.map((person) => person.email)

  const refused = await client.GET('/api/v0/memory', { params: { query: { limit: 10 } } })
  const refusal: ErrorCode | null = refused.error ? refused.error.error.code : null
  return { businessId, origin, upserted, next, emails, refusal }
}

// Never called: what the types refuse.
export function typeOnly(client: ReturnType<typeof createClient<paths>>, code: ErrorCode, me: paths['/api/v0/whoami']['get']['responses'][200]['content']['application/json']) {
  // @ts-expect-error: limit is an integer, not text
  void client.GET('/api/v0/audience/people', { params: { query: { limit: '10' } } })
  // @ts-expect-error: error codes are the closed list of src/errors.ts
  if (code === 'no_such_code') return
  // @ts-expect-error: scopes are the 13 names of src/access/scopes.ts
  const scope: (typeof me.scopes)[number] = 'ALL'
  return scope
}
`

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'bundler',
    lib: ['ES2022', 'DOM'],
    types: [],
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    skipLibCheck: true,
  },
  files: ['client.ts'],
}

describe('a typed client generated from GET /openapi', () => {
  test("type-checks a backend developer's calls: whoami, a batch write, a paged read with an integer limit, a refusal's code", async () => {
    const service = await testService()
    const document = await (await call(service, '/openapi')).json()
    await Bun.write(join(workDir, 'api.ts'), await generateTypes(document))
    await Bun.write(join(workDir, 'client.ts'), CLIENT)
    await Bun.write(join(workDir, 'tsconfig.json'), JSON.stringify(TSCONFIG))

    const tsc = Bun.spawn([join(ROOT, 'node_modules/.bin/tsc'), '-p', join(workDir, 'tsconfig.json')], {
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const output = (await new Response(tsc.stdout).text()) + (await new Response(tsc.stderr).text())
    expect(output).toBe('')
    expect(await tsc.exited).toBe(0)
  })

  test('the same calls work against the service', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, {
      type: 'private',
      scopes: ['AUDIENCE_PERSON_READ', 'AUDIENCE_PERSON_WRITE'],
    })
    await Bun.write(join(workDir, 'client.ts'), CLIENT)
    const { backendDeveloper } = await import(join(workDir, 'client.ts'))
    const fetchThroughApp = (request: Request) => service.app.handle(request)
    const result = await backendDeveloper('http://localhost', fetchThroughApp, key)
    expect(result).toMatchObject({ businessId, origin: null, upserted: 2, refusal: 'insufficient_scope' })
    expect(result.emails).toHaveLength(1)
    expect(['ada@example.com', 'grace@example.com']).toContain(result.emails[0])
    expect(typeof result.next).toBe('string')
  })
})
