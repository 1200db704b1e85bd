/**
 * The bytes a browser downloads for the files the service serves besides the API, and what
 * each compression costs once per process: the snippet (/sdk/v0.js) and the reference's
 * Scalar bundle (/docs/scalar.js), as they are, with gzip (level 9, as served) and with
 * brotli at several qualities (the snippet is served at 11, Scalar's bundle at 5).
 *
 *   bun bench/asset-sizes.ts
 *
 * Its figures are quoted in docs/snippet.md and docs/decisions.md ("Assets served compressed").
 */
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { brotliCompressSync, constants } from 'node:zlib'
import { buildSnippet } from '../src/sdk/index.ts'
import { root } from './support.ts'

const scalarBundle = join(root, 'node_modules/@scalar/api-reference/dist/browser/standalone.js')

function timed<T>(work: () => T): { result: T; ms: number } {
  const started = performance.now()
  const result = work()
  return { result, ms: performance.now() - started }
}

function report(name: string, bytes: Uint8Array<ArrayBuffer>) {
  console.log(`\n${name}: ${bytes.byteLength.toLocaleString('en')} bytes as they are`)
  console.log('| Coding | Bytes | Of the original | Time to compress |')
  console.log('|---|---|---|---|')
  const row = (coding: string, compress: () => Uint8Array) => {
    const { result, ms } = timed(compress)
    console.log(
      `| ${coding} | ${result.byteLength.toLocaleString('en')} | ${((100 * result.byteLength) / bytes.byteLength).toFixed(1)}% | ${ms.toFixed(1)} ms |`,
    )
  }
  row('gzip 9', () => Bun.gzipSync(bytes, { level: 9 }))
  for (const quality of [5, 6, 9, 11]) {
    row(`brotli ${quality}`, () =>
      brotliCompressSync(bytes, {
        params: {
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_QUALITY]: quality,
          [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
        },
      }),
    )
  }
}

console.log(
  `bun ${Bun.version}, load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
)
report('/sdk/v0.js', new TextEncoder().encode(await buildSnippet()))
report('/docs/scalar.js', await Bun.file(scalarBundle).bytes())
