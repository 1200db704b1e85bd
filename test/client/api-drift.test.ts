import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { routes } from '../../clients/node/src/api.ts'
import { operations } from '../../clients/node/src/operations.ts'
import { CLIENT_API_FILE, clientApiSource, routeShapes } from '../../tools/client-api.ts'
import { call, testService } from '../support/service.ts'

// The backend client (clients/node) is typed from the service's own OpenAPI document. These
// fail when a route changes and the client does not: regenerate with `npm run client:api`,
// then name any new operation in clients/node/src/operations.ts.

async function servedDocument() {
  const service = await testService()
  return (await (await call(service, '/openapi')).json()) as { paths: Record<string, unknown> }
}

describe('the backend client and the OpenAPI document', () => {
  test('clients/node/src/api.ts is exactly what GET /openapi generates', async () => {
    const expected = await clientApiSource(await servedDocument())
    const committed = await Bun.file(CLIENT_API_FILE).text()
    // The first differing line, so that the failure says where without printing 2,000 lines.
    const lines = [committed.split('\n'), expected.split('\n')] as const
    const at = lines[1].findIndex((line, i) => line !== lines[0][i])
    expect({
      firstDifferentLine: at === -1 ? null : at + 1,
      committed: lines[0][at],
      generated: lines[1][at],
      remedy: 'npm run client:api',
    }).toEqual({
      firstDifferentLine: null,
      committed: undefined,
      generated: undefined,
      remedy: 'npm run client:api',
    })
    expect(committed).toBe(expected)
  }, 60_000)

  test('every /api/v0 operation of the document has one client method, and every method names an operation', async () => {
    const documented = Object.keys(routeShapes(await servedDocument())).sort()
    const named: string[] = Object.values(operations).sort()
    expect(named).toEqual(documented)
    expect(new Set(named).size).toBe(named.length)
    expect(Object.keys(routes).sort()).toEqual(documented)
  })

  test("the client's README names every method", async () => {
    const readme = await Bun.file(join(import.meta.dir, '../../clients/node/README.md')).text()
    expect(Object.keys(operations).filter((name) => !readme.includes(`\`${name}`))).toEqual([])
  })

  test('no operation has two parameters of one name (a method takes path, query and header parameters in one object)', () => {
    const camel = (name: string) => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())
    const collisions = Object.entries(routes).filter(([, shape]) => {
      const names = [...shape.path, ...shape.query, ...shape.header.map(camel)]
      return new Set(names).size !== names.length
    })
    expect(collisions).toEqual([])
  })
})
