import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
// PGlite loads its WebAssembly and its file-system bundle from beside its own module at
// run time; a compiled executable has no such files. Importing them as files makes
// `bun build --compile` embed them, and the same code path serves both cases.
import pgliteWasmPath from '../node_modules/@electric-sql/pglite/dist/pglite.wasm' with { type: 'file' }
import initdbWasmPath from '../node_modules/@electric-sql/pglite/dist/initdb.wasm' with { type: 'file' }
import fsBundlePath from '../node_modules/@electric-sql/pglite/dist/pglite.data' with { type: 'file' }

//
// initdb runs only when the data directory holds no database yet (a first start, or
// `memory://`): a restart compiles only the engine itself.
export async function pgliteAssets(dataDir: string) {
  const needsInitdb = dataDir.startsWith('memory://') || !existsSync(join(dataDir, 'PG_VERSION'))
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    compile(pgliteWasmPath),
    needsInitdb ? compile(initdbWasmPath) : undefined,
  ])
  return { pgliteWasmModule, initdbWasmModule, fsBundle: Bun.file(fsBundlePath) }
}

// Read at once, so that the compilation (on the engine's own threads) is under way before
// this call returns: a start loads the app's modules meanwhile (src/index.ts).
function compile(path: string): Promise<WebAssembly.Module> {
  return WebAssembly.compile(readFileSync(path))
}
