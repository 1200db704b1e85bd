// 'file' imports give the sources' paths, and make `bun build --compile` embed the files, so
// the binary serves and builds them too (as src/sdk/index.ts does for the snippet).
// @ts-expect-error: the default export of a { type: 'file' } import is a path string
import stylesheetFile from './assets/dashboard.css' with { type: 'file' }
// @ts-expect-error: the default export of a { type: 'file' } import is a path string
import scriptSourceFile from './assets/dashboard.ts' with { type: 'file' }

let builtScript: Promise<string> | undefined
let stylesheet: Promise<string> | undefined

/** The dashboard's stylesheet as browsers get it: src/dashboard/assets/dashboard.css. */
export function dashboardStylesheet(): Promise<string> {
  stylesheet ??= Bun.file(stylesheetFile).text()
  stylesheet.catch(() => (stylesheet = undefined))
  return stylesheet
}

/**
 * The dashboard's script as browsers get it: src/dashboard/assets/dashboard.ts built into one
 * minified classic script, once per process, on first use.
 */
export function dashboardScript(): Promise<string> {
  builtScript ??= (async () => {
    // `export {}` only makes TypeScript check the file as a module; the page loads a classic script.
    const source = (await Bun.file(scriptSourceFile).text()).replace(/^export \{\}$/m, '')
    // A virtual entry: the same call works from the repository and inside the binary.
    const entry = '/keygate-dashboard/dashboard.ts'
    const result = await Bun.build({ entrypoints: [entry], files: { [entry]: source }, target: 'browser', format: 'iife', minify: true })
    const output = result.outputs[0]
    if (!result.success || !output) throw new AggregateError(result.logs, 'building the dashboard script failed')
    return (await output.text()).trim()
  })()
  // A failed build is tried again on the next request rather than kept.
  builtScript.catch(() => (builtScript = undefined))
  return builtScript
}
