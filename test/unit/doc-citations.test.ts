import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

// Code gives its reasons and figures by naming a document's section: `bench/README.md, "The
// turn's end"`. A renamed heading or a moved file would leave the comment pointing at
// nothing, so every such citation must name a Markdown file that exists and a heading
// (# to ####) of it whose text contains the quoted words.

const ROOT = resolve(import.meta.dir, '../..')
const CITING_DIRECTORIES = ['src', 'db', 'clients/node/src', 'test/support']

/**
 * `file.md, "Heading"`, the path optionally in backticks. The quoted words may wrap onto a
 * second line of a comment (its `*` or `//` is dropped); a quote never spans more.
 */
const CITATION = /`?((?:[\w.-]+\/)*[\w.-]+\.md)`?,\s+(?:(?:\*|\/\/)\s*)?"([^"\n]+(?:\n[^"\n]*)?)"/g

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

async function citingFiles(): Promise<string[]> {
  const files: string[] = []
  for (const directory of CITING_DIRECTORIES) {
    for await (const path of new Bun.Glob('**/*').scan({ cwd: join(ROOT, directory), onlyFiles: true })) {
      if (!path.split('/').includes('node_modules')) files.push(join(ROOT, directory, path))
    }
  }
  return files
}

describe('citations of documents in code', () => {
  test('every `file.md, "Heading"` in src, db, the client\'s source and the test support names a heading that exists', async () => {
    const files = await citingFiles()
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
})
