import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'

// The repository's docs stand alone: a clone has no ../shared/ and a reader may be offline.
// Every Markdown link (inline, image, reference definition, autolink, HTML href/src) must
// point to a file in the repository that exists, and a #fragment to a heading of it. Text
// in code (fences and `spans`) is not a link; a bare http(s) URL outside code is one,
// because GitHub renders it as one.

const ROOT = resolve(import.meta.dir, '../..')
const SKIPPED_DIRECTORIES = new Set(['node_modules', '.git', 'dist', 'data', 'test-results'])

function markdownFiles(directory = ROOT): string[] {
  const found: string[] = []
  for (const name of readdirSync(directory)) {
    if (SKIPPED_DIRECTORIES.has(name)) continue
    const path = join(directory, name)
    if (statSync(path).isDirectory()) found.push(...markdownFiles(path))
    else if (name.endsWith('.md')) found.push(path)
  }
  return found
}

const blank = (text: string) => text.replace(/[^\n]/g, ' ')

/** The text outside code: fenced blocks and inline code spans blanked, every offset kept. */
function outsideCode(markdown: string): string {
  let fence: string | null = null
  const kept = markdown.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence !== null) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = null
      return blank(line)
    }
    if (marker !== undefined) {
      fence = marker
      return blank(line)
    }
    return line
  })
  return kept.join('\n').replace(/(`+)[\s\S]*?\1/g, blank)
}

/** Every link target of a Markdown text, with its line number. */
export function linkTargets(markdown: string): { target: string; line: number }[] {
  let text = outsideCode(markdown)
  const lineOf = (index: number) => markdown.slice(0, index).split('\n').length
  const found: { target: string; line: number }[] = []
  const patterns = [
    /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g, // [text](target "title"), ![alt](target)
    /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm, // [label]: target
    /<((?:https?|ftp|mailto):[^>\s]+)>/g, // <https://…>
    /\b(?:href|src)\s*=\s*["']([^"']+)["']/g, // HTML
  ]
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) found.push({ target: match[1]!, line: lineOf(match.index!) })
    // Each construct once: blanked, so the bare-URL scan below does not see it again.
    text = text.replace(pattern, blank)
  }
  // A bare URL, which GitHub links too.
  for (const match of text.matchAll(/(?:https?:\/\/|www\.)[^\s)<>\]]+/g)) found.push({ target: match[0], line: lineOf(match.index!) })
  return found
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const match of outsideCode(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1]!)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

/** What is wrong with one link of `file` (a path under `root`), or null when it is fine. */
export function linkProblem(
  root: string,
  file: string,
  target: string,
  read = (path: string) => readFileSync(path, 'utf8'),
): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//') || target.startsWith('www.')) {
    return 'points outside the repository'
  }
  const hash = target.indexOf('#')
  const pathPart = decodeURIComponent((hash === -1 ? target : target.slice(0, hash)).split('?')[0]!)
  const fragment = hash === -1 ? '' : decodeURIComponent(target.slice(hash + 1))
  const destination = pathPart === '' ? file : resolve(pathPart.startsWith('/') ? root : dirname(file), pathPart.replace(/^\//, ''))
  const inside = relative(root, destination)
  if (inside.startsWith('..') || inside.startsWith(sep)) return 'points outside the repository'
  if (pathPart !== '' && !existsSync(destination)) return `points to ${inside}, which does not exist`
  if (fragment !== '' && destination.endsWith('.md') && !anchorsOf(read(destination)).has(fragment)) {
    return `points to #${fragment}, which is no heading of ${inside || 'this file'}`
  }
  return null
}

function problemsIn(root: string, files: string[]): string[] {
  const problems: string[] = []
  for (const file of files) {
    for (const { target, line } of linkTargets(readFileSync(file, 'utf8'))) {
      const problem = linkProblem(root, file, target)
      if (problem !== null) problems.push(`${relative(root, file)}:${line}: ${target} ${problem}`)
    }
  }
  return problems
}

describe('Markdown links', () => {
  test('every link in the repository points to a file in it that exists, and to a heading that exists', () => {
    const files = markdownFiles()
    expect(files.map((file) => relative(ROOT, file))).toContain('docs/api.md')
    expect(problemsIn(ROOT, files)).toEqual([])
  })

  test('the check can fail: a link outside, a missing file, a missing heading, a bare URL', () => {
    const file = join(ROOT, 'docs/example.md')
    const text = [
      '# A title',
      'See [the contract](../../shared/CONTRACT.md), [notes](../PERF-NOTES.md), [api](api.md#no-such-heading),',
      '[home](https://example.com), <https://example.org>, https://example.net and [fine](api.md#keys).',
      '![picture](screenshots/none.png) [own](#a-title) [gone](#gone)',
      '[ref]: https://example.com/ref',
      '`[in code](https://example.com)` and',
      '```',
      '[in a fence](https://example.com) https://example.com',
      '```',
    ].join('\n')
    const problems = linkTargets(text).map(({ target }) => [
      target,
      linkProblem(ROOT, file, target, (path) => (path === file ? text : readFileSync(path, 'utf8'))),
    ])
    expect(problems).toEqual([
      ['../../shared/CONTRACT.md', 'points outside the repository'],
      ['../PERF-NOTES.md', 'points to PERF-NOTES.md, which does not exist'],
      ['api.md#no-such-heading', 'points to #no-such-heading, which is no heading of docs/api.md'],
      ['https://example.com', 'points outside the repository'],
      ['api.md#keys', null],
      ['screenshots/none.png', 'points to docs/screenshots/none.png, which does not exist'],
      ['#a-title', null],
      ['#gone', 'points to #gone, which is no heading of docs/example.md'],
      ['https://example.com/ref', 'points outside the repository'],
      ['https://example.org', 'points outside the repository'],
      ['https://example.net', 'points outside the repository'],
    ])
  })
})
