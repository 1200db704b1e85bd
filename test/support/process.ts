import { join } from 'node:path'

const bun = process.execPath
const entry = join(import.meta.dir, '../../src/index.ts')
const started = new Set<ReturnType<typeof Bun.spawn>>()

/** For afterEach: a test that failed half-way must not leave its service running. */
export async function killStartedProcesses(): Promise<void> {
  const running = [...started]
  for (const child of running) child.kill('SIGKILL')
  await Promise.all(running.map((child) => child.exited))
}

/**
 * The service as operators run it (`bun src/index.ts`), its output collected. PORT 0 unless
 * given; only PATH and `env` in its environment.
 */
export function startProcess(env: Record<string, string>) {
  const child = Bun.spawn([bun, entry], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  started.add(child)
  void child.exited.then(() => started.delete(child))
  let output = ''
  const decoder = new TextDecoder()
  const read = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += decoder.decode(chunk)
  }
  const done = Promise.all([read(child.stdout), read(child.stderr)])
  return {
    child,
    output: () => output,
    /** Resolves with the port once the process says it listens (within `timeoutMs`). */
    async listening(timeoutMs = 30_000): Promise<number> {
      for (let i = 0; i < timeoutMs / 50; i++) {
        const port = /listening on http:\/\/localhost:(\d+)/.exec(output)?.[1]
        if (port) return Number(port)
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output}`)
        await Bun.sleep(50)
      }
      throw new Error(`did not listen: ${output}`)
    },
    async exited() {
      const code = await child.exited
      await done
      return code
    },
    async stop() {
      child.kill('SIGTERM')
      return this.exited()
    },
  }
}
