/**
 * `bun bench/response-headers.ts`: what building an API answer costs, by how its headers
 * are given, in instructions per answer counted by valgrind's callgrind (repeatable on a
 * busy machine, unlike time). Each variant runs twice under callgrind, with 20,000 and
 * 120,000 answers; the difference over 100,000 is the cost of one answer, start-up and
 * JIT warm-up cancelled out. About a minute per variant.
 *
 * The answer is whoami's JSON body with the headers of a granted API request: the
 * request id, the three CORS headers of contract section 1, and the content type.
 * `BENCH_VARIANTS=a,b` runs only some.
 */
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const BODY = JSON.stringify({
  businessId: '7e973413-c74e-4ab5-932e-89ce7522e53b',
  keyType: 'public',
  origin: 'https://www.example.com',
  allowedOrigins: ['example.com'],
  keyId: '3ebd8af5-bfad-4668-afc0-0c5ef4bd07b6',
  scopes: ['ANALYTICS_WRITE'],
  expiresAt: null,
})

/** Each variant is the body of a function returning one Response; `id()` is a fresh request id. */
const VARIANTS: Record<string, { what: string; code: string }> = {
  'content-type only': {
    what: 'the baseline: one header, as a bare route answers',
    code: `return new Response(BODY, { headers: { 'content-type': 'application/json;charset=utf-8' } })`,
  },
  'plain object': {
    what: 'five headers as a plain object (what Elysia builds from set.headers)',
    code: `return new Response(BODY, { status: 200, headers: { 'x-request-id': id(), 'access-control-allow-origin': ORIGIN, 'access-control-expose-headers': EXPOSED, vary: 'Origin', 'content-type': 'application/json;charset=utf-8' } })`,
  },
  'array of pairs': {
    what: 'the same five as [name, value] pairs',
    code: `return new Response(BODY, { status: 200, headers: [['x-request-id', id()], ['access-control-allow-origin', ORIGIN], ['access-control-expose-headers', EXPOSED], ['vary', 'Origin'], ['content-type', 'application/json;charset=utf-8']] })`,
  },
  'Headers template': {
    what: 'a Headers built once per Origin, copied by the Response, then the request id set (kept)',
    code: `const r = new Response(BODY, { status: 200, headers: TEMPLATE }); r.headers.set('x-request-id', id()); return r`,
  },
}

function script(code: string): string {
  return `
const BODY = ${JSON.stringify(BODY)}
const ORIGIN = 'https://www.example.com'
const EXPOSED = 'X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Idempotent-Replayed'
const TEMPLATE = new Headers({ 'access-control-allow-origin': ORIGIN, 'access-control-expose-headers': EXPOSED, vary: 'Origin', 'content-type': 'application/json;charset=utf-8' })
let counter = 0
const id = () => 'req_bench' + (counter++).toString(36)
function answer() { ${code} }
let statuses = 0
for (let i = 0, n = Number(process.env.N); i < n; i++) statuses += answer().status
if (statuses === 0) console.log('no answers')
`
}

async function instructions(file: string, answers: number): Promise<number> {
  const child = Bun.spawn(['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, file], {
    env: { ...process.env, N: String(answers) },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const log = await new Response(child.stderr).text()
  await child.exited
  const collected = /Collected : (\d+)/.exec(log)?.[1]
  if (!collected) throw new Error(`callgrind reported no count:\n${log.slice(-2000)}`)
  return Number(collected)
}

if (!Bun.which('valgrind')) {
  console.error('valgrind is not installed: `apt-get install -y valgrind`, then run again.')
  process.exit(1)
}
const only = process.env.BENCH_VARIANTS?.split(',')
const rows: string[] = []
let baseline: number | undefined
for (const [name, variant] of Object.entries(VARIANTS)) {
  if (only && !only.includes(name)) continue
  const file = join(tmpdir(), `keygate-response-${name.replace(/\W+/g, '-')}.ts`)
  writeFileSync(file, script(variant.code))
  const perAnswer = ((await instructions(file, 120_000)) - (await instructions(file, 20_000))) / 100_000
  baseline ??= perAnswer
  console.log(`${name}: ${Math.round(perAnswer)} instructions per answer`)
  rows.push(`| ${name} | ${variant.what} | ${Math.round(perAnswer).toLocaleString('en')} | ${(perAnswer / baseline).toFixed(2)} |`)
}
console.log(`\nbun ${Bun.version}; instructions per answer (callgrind, 120,000 minus 20,000 answers)\n`)
console.log('| Headers given as | what | instructions per answer | against the first row |')
console.log('|---|---|---|---|')
for (const row of rows) console.log(row)
