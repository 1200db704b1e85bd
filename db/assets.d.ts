// Bun imports these with `with { type: 'file' }` as a path (embedded when compiled).
declare module '*.wasm' {
  const path: string
  export default path
}
declare module '*.data' {
  const path: string
  export default path
}
