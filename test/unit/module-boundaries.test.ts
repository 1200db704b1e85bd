import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { dirname, join } from 'node:path'

// The floors of docs/architecture.md ("The tree"), bottom first, written once. A file may
// import the files of its own part and of any part on a lower floor; the parts of one floor
// stand side by side and never import each other (the admin API, the dashboard and the areas
// share what lies below them, not one another's files). Every file under src/ and db/ stands
// in exactly one part, so a new folder has to be given its place here.
type Floor = Readonly<Record<string, readonly string[]>>

const FLOORS: readonly Floor[] = [
  { errors: ['src/errors.ts'], process: ['src/process/**'], sdk: ['src/sdk/**'] },
  { db: ['db/**'] },
  { shared: ['src/shared/**'] },
  { config: ['src/config.ts'] },
  {
    observability: ['src/observability/**'],
    usage: ['src/usage/**'],
    audit: ['src/audit/**'],
    background: ['src/background/**'],
  },
  { access: ['src/access/**'], webhooks: ['src/webhooks/**'] },
  {
    flows: ['src/flows/**'],
    identity: ['src/identity/**'],
    keys: ['src/keys/**'],
    members: ['src/members/**'],
    events: ['src/events/**'],
    http: ['src/http/**'],
  },
  { businesses: ['src/businesses/**'], leaks: ['src/leaks/**'] },
  { areas: ['src/areas/**'], admin: ['src/admin/**'], dashboard: ['src/dashboard/**'] },
  { app: ['src/app.ts'], cli: ['src/cli.ts', 'src/cli/**'] },
  { index: ['src/index.ts'] },
]

const ROOT = join(import.meta.dir, '../..')

interface Place {
  floor: number
  part: string
}

type Graph = ReadonlyMap<string, readonly string[]>

/** Where a file stands: the floor and part whose globs hold it (null when none does). */
function placeOf(file: string, floors = FLOORS): Place | null {
  for (const [floor, parts] of floors.entries()) {
    for (const [part, globs] of Object.entries(parts)) {
      if (globs.some((glob) => new Glob(glob).match(file))) return { floor, part: `${floor + 1}:${part}` }
    }
  }
  return null
}

// Every static import and re-export (`import type` and `export … from` included: a type is
// a dependency too), a side-effect import, and `import('…')` with a literal path. Statements
// are read where Biome writes them, at the start of a line, so import-like text inside a
// string is not taken for one.
const IMPORT =
  /^(?:import|export)\b[^'"`;]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|^import\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/gm

/** The files under src/ and db/ that `source` imports by a relative path (not .sql, .json or assets). */
function importsOf(file: string, source: string): string[] {
  const targets = [...source.matchAll(IMPORT)].map((match) => join(dirname(file), match[1] ?? match[2] ?? match[3]!))
  return [...new Set(targets.filter((target) => /^(src|db)\//.test(target) && target.endsWith('.ts')))]
}

async function readHouse(): Promise<Graph> {
  const graph = new Map<string, string[]>()
  for (const file of new Glob('{src,db}/**/*.ts').scanSync(ROOT)) {
    graph.set(file, importsOf(file, await Bun.file(join(ROOT, file)).text()))
  }
  return graph
}

/** `a -> b` for each import that leaves its part for one that is not on a lower floor. */
function againstTheOrder(graph: Graph, floors = FLOORS): string[] {
  const wrong: string[] = []
  for (const [file, targets] of graph) {
    const from = placeOf(file, floors)
    for (const target of targets) {
      const to = placeOf(target, floors)
      if (from === null || to === null || from.part === to.part) continue
      if (to.floor >= from.floor) wrong.push(`${file} -> ${target} (${from.part} imports ${to.part})`)
    }
  }
  return wrong
}

/**
 * Import circles, as the files around each: a depth-first walk, where an import of a file
 * still on the walk's path closes one. Every knot of files yields at least one, so none
 * found means there are none.
 */
function circles(graph: Graph): string[][] {
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  function visit(file: string): void {
    state.set(file, 'open')
    path.push(file)
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open') found.push(path.slice(path.indexOf(target)))
      else if (!state.has(target)) visit(target)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file)
  return found
}

const house = await readHouse()

describe('module boundaries', () => {
  test('the reader finds the files and their imports, type-only ones included', () => {
    expect(house.size).toBeGreaterThan(100)
    expect(house.get('src/app.ts')).toContain('src/access/gate.ts')
    // `import type { Logger } from '../observability/log.ts'`
    expect(house.get('src/access/key-invalidation.ts')).toContain('src/observability/log.ts')
  })

  test('every file under src/ and db/ stands on one floor', () => {
    expect([...house.keys()].filter((file) => placeOf(file) === null)).toEqual([])
  })

  test('no import runs from a floor up to a higher one, or across to a part beside it', () => {
    expect(againstTheOrder(house)).toEqual([])
  })

  test('no import circles', () => {
    expect(circles(house)).toEqual([])
  })

  test('the checks can fail: an upward import, a sideways one and a circle are all found', () => {
    const floors: Floor[] = [{ low: ['src/low.ts'] }, { left: ['src/left.ts'], right: ['src/right.ts'] }]
    const graph = new Map([
      ['src/low.ts', ['src/left.ts']],
      ['src/left.ts', ['src/low.ts', 'src/right.ts']],
      ['src/right.ts', ['src/low.ts']],
    ])
    expect(againstTheOrder(graph, floors)).toEqual([
      'src/low.ts -> src/left.ts (1:low imports 2:left)',
      'src/left.ts -> src/right.ts (2:left imports 2:right)',
    ])
    expect(circles(graph)).toEqual([['src/left.ts', 'src/low.ts']])
    expect(
      importsOf('src/a/b.ts', "import type { X } from '../c.ts'\nexport { Y } from './d.ts'\nconst s = `import z from './e.ts'`"),
    ).toEqual(['src/c.ts', 'src/a/d.ts'])
  })
})
