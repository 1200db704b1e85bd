// Totals of bun's JUnit reports, as the one line CI reads: "N passed, M failed".
//
//   node .ci/junit-totals.mjs REPORT.xml=EXIT_CODE [REPORT.xml=EXIT_CODE ...]
//
// Plain Node, no dependencies: it must run even when `npm ci` failed. Each argument is a
// report and the exit status of the `bun test` run that wrote it. bun leaves out of the
// report a file that fails to load (and writes no report when no file loads), so a run
// that exited non-zero with no failure in its report counts as one failure, and so does
// a report in which no test ran.
import { existsSync, readFileSync } from 'node:fs'

let passed = 0
let failed = 0
for (const argument of process.argv.slice(2)) {
  const at = argument.lastIndexOf('=')
  const path = at === -1 ? argument : argument.slice(0, at)
  const exitCode = at === -1 ? 0 : Number(argument.slice(at + 1))
  let counts
  try {
    if (!existsSync(path)) throw new Error('no report was written')
    counts = countTestcases(readFileSync(path, 'utf8'))
  } catch (error) {
    console.error(`report ${path}: unreadable (${error.message}); counted as one failure`)
    failed += 1
    continue
  }
  if (counts.passed + counts.failed + counts.skipped === 0) {
    console.error(`report ${path}: no test ran; counted as one failure`)
    counts.failed = 1
  } else if (exitCode !== 0 && counts.failed === 0) {
    console.error(`report ${path}: bun test exited ${exitCode} with no failed test in it (a file failed to load?); counted as one failure`)
    counts.failed = 1
  }
  console.error(`report ${path}: pass ${counts.passed}, fail ${counts.failed}, skip ${counts.skipped}`)
  passed += counts.passed
  failed += counts.failed
}
console.log(`${passed} passed, ${failed} failed`)
process.exitCode = failed > 0 ? 1 : 0

/**
 * Counts <testcase> elements: failed when one holds <failure> or <error>, skipped when it
 * holds <skipped>, else passed. A small scanner rather than regular expressions over the
 * text: it honours quoted attributes (a test name may hold ">"), comments and CDATA (a
 * failure message may quote XML), and refuses a truncated report.
 */
function countTestcases(xml) {
  const counts = { passed: 0, failed: 0, skipped: 0 }
  let current = null // the open <testcase>: { failed, skipped }
  let sawRoot = false
  let i = 0
  while ((i = xml.indexOf('<', i)) !== -1) {
    if (xml.startsWith('<!--', i)) {
      i = after(xml, '-->', i)
      continue
    }
    if (xml.startsWith('<![CDATA[', i)) {
      i = after(xml, ']]>', i)
      continue
    }
    if (xml.startsWith('<?', i) || xml.startsWith('<!', i)) {
      i = after(xml, '>', i)
      continue
    }
    const closing = xml[i + 1] === '/'
    const name = /^[A-Za-z_][\w.:-]*/.exec(xml.slice(i + (closing ? 2 : 1), i + 80))?.[0]
    if (!name) throw new Error(`stray "<" at offset ${i}`)
    let end = i + 1
    for (let quote = null; ; end++) {
      if (end >= xml.length) throw new Error('the report ends inside a tag')
      const c = xml[end]
      if (quote) {
        if (c === quote) quote = null
      } else if (c === '"' || c === "'") quote = c
      else if (c === '>') break
    }
    const selfClosing = xml[end - 1] === '/'
    i = end + 1

    if (name === 'testsuites') sawRoot = true
    if (name === 'testcase') {
      if (closing) {
        if (!current) throw new Error('</testcase> without <testcase>')
        tally(counts, current)
        current = null
      } else {
        if (current) throw new Error('<testcase> inside <testcase>')
        current = { failed: false, skipped: false }
        if (selfClosing) {
          tally(counts, current)
          current = null
        }
      }
    } else if (current && !closing && (name === 'failure' || name === 'error')) current.failed = true
    else if (current && !closing && name === 'skipped') current.skipped = true
  }
  if (current) throw new Error('the report ends inside a <testcase>')
  if (!sawRoot) throw new Error('no <testsuites> element')
  return counts
}

function tally(counts, testcase) {
  if (testcase.failed) counts.failed += 1
  else if (testcase.skipped) counts.skipped += 1
  else counts.passed += 1
}

function after(text, marker, from) {
  const at = text.indexOf(marker, from)
  if (at === -1) throw new Error(`the report ends before "${marker}"`)
  return at + marker.length
}
