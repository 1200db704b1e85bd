import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

// Code gives its reasons and figures by naming what a reader of the repository has: a
// document's heading (`bench/README.md, "The turn's end"`) or a file (`src/events/read.ts`).
// A renamed heading or a moved file would leave the comment pointing at nothing, and a
// "section N" of a document outside the repository points at something no reader has. So
// in every TypeScript file of the code, the client, the benches, the tools and the tests:
// - a `file.md, "Heading"` names a Markdown file that exists and a heading (# to ####) of
//   it whose text contains the quoted words;
// - a path from the repository's root (src/…, db/…, docs/…, bench/…, test/…, tools/…,
//   clients/…) names a file that exists;
// - no text cites a "section N" or "§N", except of an RFC (a public standard).

const ROOT = resolve(import.meta.dir, '../..')
const CITING_DIRECTORIES = ['src', 'db', 'clients/node/src', 'bench', 'tools', 'test']
const SKIPPED_DIRECTORIES = ['node_modules', 'dist']

/**
 * `file.md, "Heading"`, the path optionally in backticks. The quoted words may wrap onto a
 * second line of a comment (its `*` or `//` is dropped); a quote never spans more.
 */
const CITATION = /`?((?:[\w.-]+\/)*[\w.-]+\.md)`?,\s+(?:(?:\*|\/\/)\s*)?"([^"\n]+(?:\n[^"\n]*)?)"/g

/** A numbered section of some document, unless an RFC's: `RFC 9110 section 15.5.6` is public. */
const SECTION = /(?<!RFC \d{1,5},? )(?:\bsection|§) ?\d+/gi

/**
 * A repository path with a file extension, from the root: not part of a longer path (an
 * import's `../../src/x.ts` is checked by the compiler) nor of a URL.
 */
const REPOSITORY_PATH =
  /(?<![\w./:@-])((?:src|db|docs|bench|test|tools|clients)\/[\w./-]*[\w-]\.(?:ts|md|sql|json|lua|mjs|js|css|html|sh|yml|yaml))(?![\w/])/g

/** The quoted words as one line: a comment's line break and its `*` or `//` become a space. */
const unwrapped = (text: string) => text.replace(/\n\s*(?:\*|\/\/)?\s*/g, ' ')

const normalized = (text: string) => unwrapped(text).replace(/[`*]/g, '').replace(/\s+/g, ' ').trim().toLowerCase()

/** The headings (# to ####) of a Markdown text, outside fenced code. */
function headingsOf(markdown: string): string[] {
  const headings: string[] = []
  let fence: string | null = null
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence !== null) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = null
      continue
    }
    if (marker !== undefined) {
      fence = marker
      continue
    }
    const heading = /^#{1,4}\s+(.+?)\s*#*\s*$/.exec(line)?.[1]
    if (heading !== undefined) headings.push(normalized(heading))
  }
  return headings
}

/**
 * What is wrong with each citation in `text` (the content of `file`, a path under `root`):
 * one line per citation that names a missing file or no heading of it. A path is taken from
 * the repository's root, or else from the citing file's directory.
 */
export function citationProblems(root: string, file: string, text: string, read = (path: string) => readFileSync(path, 'utf8')): string[] {
  const problems: string[] = []
  for (const match of text.matchAll(CITATION)) {
    const [, path, quoted] = match as unknown as [string, string, string]
    const line = text.slice(0, match.index).split('\n').length
    const where = `${relative(root, file)}:${line}: ${path}, "${unwrapped(quoted)}"`
    const target = [join(root, path), join(dirname(file), path)].find((candidate) => existsSync(candidate))
    if (target === undefined) {
      problems.push(`${where}: no such file`)
      continue
    }
    const words = normalized(quoted)
    if (!headingsOf(read(target)).some((heading) => heading.includes(words)))
      problems.push(`${where}: no heading of ${relative(root, target)} holds these words`)
  }
  return problems
}

/**
 * The comments of a TypeScript text, everything else blanked (line breaks and offsets
 * kept): a path in a string is data (a test's example, a build output), in a comment it is
 * a citation. A comment starts a line or follows a space, so `https://…` and a glob's
 * `**\/*` inside a string are not taken for one.
 */
const commentsOf = (text: string) => {
  const kept = text.replace(/[^\n]/g, ' ').split('')
  for (const match of text.matchAll(/(?<=^|\s)(?:\/\/[^\n]*|\/\*[\s\S]*?\*\/)/gm)) {
    for (let at = match.index; at < match.index + match[0].length; at++) kept[at] = text[at] as string
  }
  return kept.join('')
}

/** The 1-based line of `index` in `text`. */
const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length

/**
 * What else is wrong in `text` (the content of `file`): each "section N" cited (in a
 * comment or in a string, such as an OpenAPI description), and each repository path in a
 * comment that names no file. A path is taken from the repository's root, or from
 * a folder holding the citing file (the client's `src/…` is its package's).
 */
export function pathAndSectionProblems(root: string, file: string, text: string): string[] {
  const problems: string[] = []
  const where = (index: number) => `${relative(root, file)}:${lineAt(text, index)}`
  for (const match of text.matchAll(SECTION)) {
    problems.push(`${where(match.index)}: "${match[0]}" of a document the repository does not hold: cite a docs heading or state the rule`)
  }
  const bases: string[] = []
  for (let folder = dirname(file); folder.startsWith(root); folder = dirname(folder)) bases.push(folder)
  for (const match of commentsOf(text).matchAll(REPOSITORY_PATH)) {
    const path = match[1] as string
    if (!bases.some((base) => existsSync(join(base, path)))) problems.push(`${where(match.index)}: ${path}: no such file`)
  }
  return problems
}

async function citingFiles(): Promise<string[]> {
  const files: string[] = []
  for (const directory of CITING_DIRECTORIES) {
    // Code, and the migrations' comments (SQL).
    for await (const path of new Bun.Glob('**/*.{ts,sql}').scan({ cwd: join(ROOT, directory), onlyFiles: true })) {
      if (!path.split('/').some((part) => SKIPPED_DIRECTORIES.includes(part))) files.push(join(ROOT, directory, path))
    }
  }
  return files
}

/** This file's own examples cite what does not exist, on purpose. */
const checked = async () => (await citingFiles()).filter((file) => file !== import.meta.path)

describe('citations in code', () => {
  test('every `file.md, "Heading"` in src, db, the client, bench, tools and test names a heading that exists', async () => {
    const files = await checked()
    expect(files.map((file) => relative(ROOT, file))).toContain('src/http/turn-end.ts')
    const cited = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(CITATION)])
    expect(cited.length).toBeGreaterThan(10)
    expect(files.flatMap((file) => citationProblems(ROOT, file, readFileSync(file, 'utf8')))).toEqual([])
  })

  test('the check can fail: a made-up heading, a missing file, and a wrapped citation is still read', () => {
    const file = join(ROOT, 'src/example.ts')
    const text = [
      '// Answered at the turn\'s end (bench/README.md, "The turn\'s end").',
      '// Not measured anywhere (bench/README.md, "A heading nobody wrote").',
      '/** See `docs/no-such-file.md`, "Anything". */',
      '/**',
      ' * Pages on a cursor (docs/architecture.md, "A heading',
      ' * that wraps and does not exist").',
      ' */',
      'const note = \'docs/architecture.md, "Cursors" is fine\'',
    ].join('\n')
    expect(citationProblems(ROOT, file, text)).toEqual([
      'src/example.ts:2: bench/README.md, "A heading nobody wrote": no heading of bench/README.md holds these words',
      'src/example.ts:3: docs/no-such-file.md, "Anything": no such file',
      'src/example.ts:5: docs/architecture.md, "A heading that wraps and does not exist": no heading of docs/architecture.md holds these words',
    ])
  })

  test('no code cites a section of a document outside the repository, and every repository path it names exists', async () => {
    const files = await checked()
    expect(files.map((file) => relative(ROOT, file))).toContain('bench/support.ts')
    const problems = files.flatMap((file) => pathAndSectionProblems(ROOT, file, readFileSync(file, 'utf8')))
    expect(problems).toEqual([])
  })

  test('the path and section check can fail: a section of the contract, a moved file; an RFC, an import, a string and a real file pass', () => {
    const file = join(ROOT, 'src/example.ts')
    const text = [
      '// Budgets of contract section 8, and §13 too.',
      '// The rule is in src/access/no-such-rule.ts and docs/nowhere.md.',
      '// A method it does not take (RFC 9110 section 15.5.6).',
      "import { x } from '../../src/not-checked-here.ts'",
      "const fixture = 'src/a/b.ts' // data, not a citation; but docs/gone.md here is one",
      '/* See src/http/turn-end.ts and https://example.com/src/elsewhere.ts. */',
    ].join('\n')
    expect(pathAndSectionProblems(ROOT, file, text)).toEqual([
      'src/example.ts:1: "section 8" of a document the repository does not hold: cite a docs heading or state the rule',
      'src/example.ts:1: "§13" of a document the repository does not hold: cite a docs heading or state the rule',
      'src/example.ts:2: src/access/no-such-rule.ts: no such file',
      'src/example.ts:2: docs/nowhere.md: no such file',
      'src/example.ts:5: docs/gone.md: no such file',
    ])
  })
})
