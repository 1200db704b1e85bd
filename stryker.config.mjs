// Mutation testing: run it through `npm run test:mutation` (tools/mutation.ts), which picks
// the test files for the mutated ones and passes them here (docs/testing.md).
const tests = process.env.MUTATION_TEST_FILES
if (!tests) throw new Error('run mutation testing with `npm run test:mutation` (tools/mutation.ts picks the tests)')

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  // No Stryker runner knows `bun test`: each mutant is one run of the command, killed when it
  // fails. `--bail` stops at the first failing test. The tests run on PGlite unless
  // DATABASE_URL is set, as `npm test` does.
  testRunner: 'command',
  buildCommand: 'bun tools/mutation.ts --in-sandbox',
  commandRunner: { command: `bun test --timeout 30000 --bail ${tests}` },
  // The command runner cannot tell which tests cover a mutant: every mutant runs them all.
  coverageAnalysis: 'off',
  // Two shared cores: more runs at once only slow each other and the database.
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  // What the sandbox copy of the repository leaves out: data, builds, results, reports.
  ignorePatterns: ['data', 'dist', 'reports', 'test-results', 'bench/results', '*.db'],
  tempDirName: '.stryker-tmp',
  // Stryker rewrites the tsconfig it is named with the JavaScript API of \`typescript\`, which
  // the TypeScript 7 of this repository does not have; Bun needs no rewrite (the sandbox
  // keeps the layout): naming a file that does not exist turns the rewrite off.
  tsconfigFile: 'tsconfig.stryker-none.json',
  cleanTempDir: true,
}
