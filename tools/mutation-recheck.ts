/**
 * Survivors tested again (docs/testing.md, "The files scored last"): after tests were added
 * for a file that did not change, applies each survivor of a Stryker JSON report alone to
 * its file, runs the test files `tools/mutation.ts` picks for it with `--bail` (as Stryker
 * does), restores the file, and prints each survivor's fate and the file's new score. The
 * mutants the report counts as killed stay killed: tests were only added.
 *
 *   bun tools/mutation-recheck.ts reports/mutation/mutation.json
 *
 * `STATUS=Timeout` tests the report's timeouts instead (a busy machine times out mutants
 * its tests would kill). Run it in a checkout nothing else uses: it rewrites the files.
 */
import { testsFor } from './mutation.ts'

interface Mutant {
  status: string
  mutatorName: string
  replacement?: string
  location: { start: { line: number; column: number }; end: { line: number; column: number } }
}

const report = (await Bun.file(process.argv[2] ?? 'reports/mutation/mutation.json').json()) as {
  files: Record<string, { source: string; mutants: Mutant[] }>
}
const retested = process.env.STATUS ?? 'Survived'

for (const [file, { source, mutants }] of Object.entries(report.files)) {
  if ((await Bun.file(file).text()) !== source) throw new Error(`${file} changed since the report: run Stryker again`)
  const lines = source.split('\n')
  // Stryker's lines count from 1, its columns from 1 as well.
  const offset = (line: number, column: number) => lines.slice(0, line - 1).reduce((n, text) => n + text.length + 1, 0) + column - 1
  const tests = testsFor([file])
  let killedNow = 0
  try {
    for (const mutant of mutants.filter((m) => m.status === retested)) {
      const { start, end } = mutant.location
      await Bun.write(
        file,
        source.slice(0, offset(start.line, start.column)) + (mutant.replacement ?? '') + source.slice(offset(end.line, end.column)),
      )
      // A mutant that hangs its tests is killed, as Stryker counts a timeout.
      const run = Bun.spawnSync(['bun', 'test', '--timeout', '30000', '--bail', ...tests], {
        stdout: 'ignore',
        stderr: 'ignore',
        timeout: 120_000,
      })
      const killed = run.exitCode !== 0
      if (killed) killedNow++
      console.log(
        `${killed ? 'killed  ' : 'SURVIVED'} ${file}:${start.line}:${start.column} ${mutant.mutatorName} -> ${(mutant.replacement ?? '').replace(/\s+/g, ' ').slice(0, 80)}`,
      )
    }
  } finally {
    await Bun.write(file, source)
  }
  const count = (status: string) => mutants.filter((m) => m.status === status).length
  const scored = count('Killed') + count('Timeout') + count('Survived') + count('NoCoverage')
  const detected = count('Killed') + count('Timeout') - (retested === 'Timeout' ? count('Timeout') : 0) + killedNow
  console.log(
    `${file}: ${mutants.length} mutants, ${detected} detected, ${scored - detected} survived: ${((100 * detected) / scored).toFixed(2)} %`,
  )
}
