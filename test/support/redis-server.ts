import { RedisClient } from 'bun'

/**
 * True where Debian's redis-server is not installed (a Node-only machine): tests that need
 * one stand aside there, saying so. CI installs it, and there a missing one is a failure.
 */
export function redisServerMissing(what: string): boolean {
  if (Bun.which('redis-server') !== null) return false
  if (process.env.CI) throw new Error('redis-server is required in CI (apt-get install redis-server)')
  console.warn(`\n*** ${what} not run: no redis-server on the PATH (apt-get install redis-server) ***\n`)
  return true
}

export interface TestRedis {
  url: string
  port: number
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers. */
  pause(): void
  resume(): void
  stop(): Promise<void>
}

/**
 * A redis-server of the test's own on a free loopback port (Debian's redis-server), so a
 * test can stop it without disturbing anyone else's Redis; on `port` to start one again
 * where a stopped one was. No persistence.
 */
export async function startRedis(port?: number): Promise<TestRedis> {
  port ??= await freePort()
  const process = Bun.spawn(['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `redis://127.0.0.1:${port}`
  const deadline = Date.now() + 10_000
  for (;;) {
    const client = new RedisClient(url, { connectionTimeout: 500, autoReconnect: false })
    try {
      await client.connect()
      await client.send('PING', [])
      client.close()
      break
    } catch (error) {
      client.close()
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer: ${String(error)}`)
      await Bun.sleep(50)
    }
  }
  return {
    url,
    port,
    pause: () => process.kill('SIGSTOP'),
    resume: () => process.kill('SIGCONT'),
    async stop() {
      process.kill('SIGKILL')
      await process.exited
    },
  }
}

export async function freePort(): Promise<number> {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = server.port!
  server.stop(true)
  return port
}
