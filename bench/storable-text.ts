/**
 * The cost of the hostile-input screen (src/http/json-body.ts) against plain JSON.parse,
 * and of the storable-text rule against a regex, measured in one run (ratios hold when the
 * machine's speed drifts). Run: bun bench/storable-text.ts
 */
import { parseJsonBody } from '../src/http/json-body.ts'

function perCall(label: string, iterations: number, fn: () => unknown): number {
  for (let i = 0; i < iterations / 10; i++) fn()
  const start = Bun.nanoseconds()
  for (let i = 0; i < iterations; i++) fn()
  const ns = (Bun.nanoseconds() - start) / iterations
  console.log(`${label.padEnd(44)} ${ns.toFixed(0).padStart(8)} ns`)
  return ns
}

const samples = ['page_view', 'https://www.example.com/pricing?utm=1', 'a'.repeat(200), 'héllo wörld €', '']
const SURROGATE_OR_NUL = /[\u0000\uD800-\uDFFF]/
let sink = 0
const regex =
  perCall('regex /[\\u0000\\uD800-\\uDFFF]/ per string', 2_000_000, () => {
    for (const s of samples) if (!SURROGATE_OR_NUL.test(s)) sink++
  }) / samples.length
const wellFormed =
  perCall('isWellFormed() + includes per string', 2_000_000, () => {
    for (const s of samples) if (s.isWellFormed() && !s.includes('\u0000')) sink++
  }) / samples.length

const event = {
  eventType: 'page_view',
  url: 'https://www.example.com/pricing',
  referrer: 'https://search.example/',
  anonymousId: 'anon-1',
  properties: { plan: 'pro', nested: { depth: [1, 2] } },
}
const one = JSON.stringify(event)
const batch = JSON.stringify({ events: Array.from({ length: 500 }, () => event) })
const oneParse = perCall('JSON.parse, one event', 200_000, () => JSON.parse(one))
const oneScreen = perCall('parseJsonBody, one event', 200_000, () => parseJsonBody(one))
const batchParse = perCall('JSON.parse, 500 events', 2_000, () => JSON.parse(batch))
const batchScreen = perCall('parseJsonBody, 500 events', 2_000, () => parseJsonBody(batch))

console.log(
  `\nper string: isWellFormed+includes ${wellFormed.toFixed(1)} ns, regex ${regex.toFixed(1)} ns (ratio ${(wellFormed / regex).toFixed(2)})`,
)
console.log(`screen / JSON.parse: one event ${(oneScreen / oneParse).toFixed(2)}, 500 events ${(batchScreen / batchParse).toFixed(2)}`)
if (sink < 0) console.log(sink)
