import { afterAll, expect, test } from 'bun:test'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { call, testService } from '../support/service.ts'

const ROOT = resolve(import.meta.dir, '../..')
const workDir = await mkdtemp(join(tmpdir(), 'keygate-openapi-lint-'))
afterAll(() => rm(workDir, { recursive: true, force: true }))

interface LintReport {
  totals: { errors: number; warnings: number }
  problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[]
}

// Warnings kept on purpose (docs/decisions.md): the service publishes no licence.
const ACCEPTED_WARNINGS = ['info-license']

test("GET /openapi passes Redocly's recommended rules with no error", async () => {
  const service = await testService()
  const file = join(workDir, 'openapi.json')
  await Bun.write(file, await (await call(service, '/openapi')).text())

  const lint = Bun.spawn(
    ['node', join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', file, '--format=json', '--max-problems=1000'],
    {
      stdout: 'pipe',
      stderr: 'pipe',
      // No telemetry or update check: the test needs no network.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  )
  const report = JSON.parse(await new Response(lint.stdout).text()) as LintReport
  await lint.exited
  const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`)
  expect(problems.filter((p) => !ACCEPTED_WARNINGS.some((rule) => p.startsWith(`warn ${rule} `)))).toEqual([])
  expect(report.totals.errors).toBe(0)
})
