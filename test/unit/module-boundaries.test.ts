import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { dirname, join, relative } from 'node:path'

// The admin API and the services it uses stand on their own: the dashboard is one client
// of src/keys and src/members, not a library of theirs (docs/architecture.md).

const ROOT = join(import.meta.dir, '../..')
const transpiler = new Bun.Transpiler({ loader: 'ts' })

/** Every module under src/ that `file` reaches through relative imports, itself included. */
async function reachable(file: string): Promise<Set<string>> {
  const seen = new Set<string>()
  const pending = [file]
  while (pending.length > 0) {
    const next = pending.pop()!
    if (seen.has(next)) continue
    seen.add(next)
    for (const { path } of transpiler.scanImports(await Bun.file(next).text())) {
      const target = join(dirname(next), path)
      if (path.startsWith('.') && target.startsWith(join(ROOT, 'src/')) && target.endsWith('.ts')) pending.push(target)
    }
  }
  return seen
}

describe('module boundaries', () => {
  const adminFiles = [...new Glob('src/admin/*.ts').scanSync(ROOT)].map((f) => join(ROOT, f))

  test('there are admin modules to check', () => {
    expect(adminFiles.length).toBeGreaterThan(5)
  })

  test('nothing the admin API imports, directly or through another module, is in src/dashboard', async () => {
    const reached = new Set<string>()
    for (const file of adminFiles) for (const module of await reachable(file)) reached.add(relative(ROOT, module))
    expect([...reached].filter((path) => path.startsWith('src/dashboard/'))).toEqual([])
    // The walk does follow imports: the members service is reached through src/admin/members.ts.
    expect(reached.has('src/members/service.ts')).toBe(true)
  })
})
