/**
 * Mutation testing (docs/testing.md): `npm run test:mutation`, or
 * `npm run test:mutation -- --mutate src/access/rate-limit/gcra.ts` for one file.
 *
 * Stryker has no Bun test runner, so it runs its `command` runner: each mutant is one
 * `bun test --bail` of the test files that exercise the mutated files, picked here (every
 * test file would make one mutant cost a whole suite, and a folder hours). The files go to
 * stryker.config.mjs in MUTATION_TEST_FILES. Other arguments are passed to Stryker.
 */
import { existsSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { Glob } from 'bun'

/** What is mutated when no --mutate is given (docs/testing.md, "Mutation testing"). */
export const MUTATED = ['src/access/**/*.ts', 'src/events/**/*.ts', 'clients/node/src/delivery.ts']

/**
 * The tests that exercise each mutated path, by path prefix: the first prefix a file
 * starts with names its tests. Tests reaching a module only through the whole app are
 * left out on purpose (they would put the whole suite behind every mutant); a mutant they
 * alone would kill shows as a survivor, to be killed by a test listed here.
 */
const TESTS_BY_PREFIX: [prefix: string, tests: string[]][] = [
  ['src/access/rate-limit/redis.ts', ['test/redis/shared-counters.test.ts', 'test/api/rate-limit-shared.test.ts']],
  [
    'src/access/rate-limit/',
    [
      'test/unit/rate-limit.test.ts',
      'test/unit/rate-limit-leases.test.ts',
      'test/unit/failure-budget.test.ts',
      'test/api/rate-limit.test.ts',
      'test/api/rate-limit-shared.test.ts',
    ],
  ],
  ['src/access/origin', ['test/unit/origin.test.ts', 'test/api/origins.test.ts']],
  ['src/access/allowed-ips.ts', ['test/unit/allowed-ips.test.ts', 'test/unit/ip.test.ts', 'test/api/allowed-ips.test.ts']],
  ['src/access/scopes.ts', ['test/api/route-matrix.test.ts', 'test/api/keys.test.ts']],
  ['src/access/secrets.ts', ['test/unit/secrets.test.ts']],
  [
    'src/access/key-store.ts',
    ['test/unit/gate.test.ts', 'test/db/key-store.test.ts', 'test/api/invalidation.test.ts', 'test/db/retention-cache.test.ts'],
  ],
  ['src/access/key-invalidation.ts', ['test/unit/key-invalidation.test.ts', 'test/api/invalidation.test.ts']],
  ['src/access/last-used.ts', ['test/db/last-used.test.ts', 'test/api/last-used.test.ts']],
  ['src/access/key-format.ts', ['test/unit/key-format.test.ts', 'test/api/chain.test.ts', 'test/api/rate-limit.test.ts']],
  [
    'src/access/',
    [
      'test/unit/chain.test.ts',
      'test/unit/gate.test.ts',
      'test/unit/direct-route.test.ts',
      'test/api/chain.test.ts',
      'test/api/whoami.test.ts',
      'test/api/rate-limit.test.ts',
    ],
  ],
  ['src/events/erasure.ts', ['test/api/erasure.test.ts']],
  ['src/events/maintenance.ts', ['test/db/event-maintenance.test.ts', 'test/api/erasure.test.ts']],
  ['src/events/partitions.ts', ['test/db/partitions.test.ts', 'test/db/event-maintenance.test.ts']],
  ['src/events/group-commit.ts', ['test/unit/group-commit.test.ts', 'test/api/ingest-isolation.test.ts']],
  ['src/events/time-bounds.ts', ['test/api/analytics.test.ts', 'test/db/event-maintenance.test.ts']],
  [
    'src/events/retention.ts',
    ['test/unit/retention.test.ts', 'test/api/retention.test.ts', 'test/db/retention-cache.test.ts', 'test/api/analytics.test.ts'],
  ],
  ['src/events/read.ts', ['test/db/event-read.test.ts', 'test/api/analytics.test.ts', 'test/api/retention.test.ts']],
  [
    'src/events/write.ts',
    ['test/unit/event-write.test.ts', 'test/api/analytics.test.ts', 'test/api/retention.test.ts', 'test/db/retention-cache.test.ts'],
  ],
  ['src/events/', ['test/api/retention.test.ts', 'test/db/retention-cache.test.ts', 'test/api/analytics.test.ts']],
  ['clients/node/src/delivery.ts', ['clients/node/test/delivery.test.ts', 'clients/node/test/delivery-edges.test.ts']],
]

/** The test files for the files `patterns` (Stryker's --mutate globs) select. */
export function testsFor(patterns: string[]): string[] {
  const tests = new Set<string>()
  for (const pattern of patterns) {
    // A Stryker range (`file.ts:10-20`) and an exclusion (`!glob`) select no tests of their own.
    if (pattern.startsWith('!')) continue
    const path = pattern.replace(/:\d+(:\d+)?-\d+(:\d+)?$/, '')
    const files = [...new Glob(path).scanSync({ cwd: process.cwd() })]
    if (files.length === 0) throw new Error(`--mutate ${pattern} names no file`)
    for (const file of files) {
      const found = TESTS_BY_PREFIX.find(([prefix]) => file.startsWith(prefix))
      if (!found) throw new Error(`no tests are listed for ${file} in tools/mutation.ts`)
      for (const test of found[1]) tests.add(test)
    }
  }
  // Unit files first, then the others in the table's order (a quick file before a slow
  // one): `bun test` runs the files in the order given and `--bail` stops at the first
  // failure, so a mutant a quick test kills never waits for a slower suite.
  const unit = (file: string) => (file.startsWith('test/unit/') ? 0 : 1)
  return [...tests].sort((a, b) => unit(a) - unit(b))
}

/**
 * Run by Stryker in its sandbox before the tests: Stryker links the repository's
 * node_modules into it only when that is a directory, not a link (as in a git worktree),
 * and src/http/openapi.ts and the tests reach into node_modules by relative path.
 */
function linkNodeModules(root: string): void {
  if (!existsSync('node_modules')) symlinkSync(join(root, 'node_modules'), 'node_modules')
}

if (import.meta.main && process.argv[2] === '--in-sandbox') {
  linkNodeModules(process.env.MUTATION_ROOT!)
} else if (import.meta.main) {
  const args = process.argv.slice(2)
  const at = args.indexOf('--mutate')
  const mutate = at === -1 ? MUTATED : args[at + 1]!.split(',')
  if (at === -1) args.push('--mutate', MUTATED.join(','))
  const tests = testsFor(mutate)
  console.log(`mutating ${mutate.join(', ')}\nagainst ${tests.join(' ')}`)
  const run = Bun.spawnSync(['stryker', 'run', 'stryker.config.mjs', ...args], {
    env: { ...process.env, MUTATION_TEST_FILES: tests.join(' '), MUTATION_ROOT: process.cwd() },
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  process.exit(run.exitCode ?? 1)
}
