import { expect } from 'bun:test'
import { join } from 'node:path'

const bun = process.execPath
const entry = join(import.meta.dir, '../../src/index.ts')
const started = new Set<ReturnType<typeof Bun.spawn>>()

/**
 * How long a test that starts the service may take. A first start measured 4-5 s on a
 * quiet machine and up to 85 s on a two-core machine shared with five test runs, a restart
 * up to 11 s (bench/README.md, "Start-up time"); a test makes at most one first start and a
 * restart, so this leaves it more than twice the worst seen.
 */
export const PROCESS_TEST_TIMEOUT = 240_000
/** The wait for the "listening" line of one start. */
const LISTEN_TIMEOUT_MS = 180_000

/** For afterEach: a test that failed half-way must not leave its service running. */
export async function killStartedProcesses(): Promise<void> {
  const running = [...started]
  for (const child of running) child.kill('SIGKILL')
  await Promise.all(running.map((child) => child.exited))
}

/**
 * The service as operators run it (`bun src/index.ts`, or `command` in `cwd`), its output
 * collected. PORT 0 unless given; only PATH and `env` in its environment.
 */
export function startProcess(env: Record<string, string>, options: { command?: string[]; cwd?: string } = {}) {
  const child = Bun.spawn(options.command ?? [bun, entry], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', PORT: '0', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  started.add(child)
  void child.exited.then(() => started.delete(child))
  let output = ''
  const streams = { stdout: '', stderr: '' }
  const read = async (name: keyof typeof streams, stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true })
      streams[name] += text
      output += text
    }
  }
  const done = Promise.all([read('stdout', child.stdout), read('stderr', child.stderr)])
  return {
    child,
    /** Both streams, as they came. */
    output: () => output,
    stdout: () => streams.stdout,
    stderr: () => streams.stderr,
    /** Resolves with the port once the process says it listens (within `timeoutMs`). */
    async listening(timeoutMs = LISTEN_TIMEOUT_MS): Promise<number> {
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline) {
        const port = /listening on http:\/\/localhost:(\d+)/.exec(output)?.[1]
        if (port) return Number(port)
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output}`)
        await Bun.sleep(50)
      }
      throw new Error(`did not listen within ${timeoutMs / 1000} s: ${output}`)
    },
    /** Resolves once the output holds `text` (the start's last lines follow "listening"). */
    async said(text: string, timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs
      while (!output.includes(text)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`never said ${JSON.stringify(text)}: ${output}`)
        await Bun.sleep(25)
      }
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

/** POSTs to the admin API of a started process with `token`; expects 201 and answers the record. */
export function adminPost(base: string, token: string) {
  return async (path: string, body: unknown): Promise<{ id: string; key: string }> => {
    const response = await fetch(base + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    expect(response.status).toBe(201)
    return (await response.json()) as { id: string; key: string }
  }
}
