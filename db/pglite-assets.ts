// PGlite loads its WebAssembly and its file-system bundle from beside its own module at
// run time; a compiled executable has no such files. Importing them as files makes
// `bun build --compile` embed them, and the same code path serves both cases.
import pgliteWasmPath from '../node_modules/@electric-sql/pglite/dist/pglite.wasm' with { type: 'file' }
import initdbWasmPath from '../node_modules/@electric-sql/pglite/dist/initdb.wasm' with { type: 'file' }
import fsBundlePath from '../node_modules/@electric-sql/pglite/dist/pglite.data' with { type: 'file' }

export async function pgliteAssets() {
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    WebAssembly.compile(await Bun.file(pgliteWasmPath).arrayBuffer()),
    WebAssembly.compile(await Bun.file(initdbWasmPath).arrayBuffer()),
  ])
  return { pgliteWasmModule, initdbWasmModule, fsBundle: Bun.file(fsBundlePath) }
}
