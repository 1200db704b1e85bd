// A 'file' import gives the source's path, and makes `bun build --compile` embed the file,
// so the binary can build the snippet too. TypeScript cannot type such an import.
// @ts-expect-error: the default export of a { type: 'file' } import is a path string
import snippetSourceFile from './snippet.ts' with { type: 'file' }

let built: Promise<string> | undefined

/**
 * The tracking snippet as browsers get it: src/sdk/snippet.ts minified in memory, once per
 * process (a few milliseconds), on first use. src/http/sdk-route.ts serves it.
 */
export function buildSnippet(): Promise<string> {
  built ??= (async () => {
    // `export {}` only makes TypeScript check the file as a module; the browser gets a
    // classic script, and an ES module entry would cost an interop wrapper in the IIFE.
    const source = (await Bun.file(snippetSourceFile).text()).replace(/^export \{\}$/m, '')
    // A virtual entry: the same call works from the repository and inside the binary.
    const entry = '/keygate-sdk/snippet.ts'
    const result = await Bun.build({
      entrypoints: [entry],
      files: { [entry]: source },
      target: 'browser',
      format: 'iife',
      minify: true,
    })
    const output = result.outputs[0]
    if (!result.success || !output) throw new AggregateError(result.logs, 'building the SDK snippet failed')
    return (await output.text()).trim()
  })()
  // A failed build is tried again on the next request rather than kept.
  built.catch(() => (built = undefined))
  return built
}
