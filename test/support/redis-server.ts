import { RedisClient } from 'bun'

/**
 * A redis-server of the test's own on a free loopback port (Debian's redis-server), so a
 * test can stop it without disturbing anyone else's Redis. No persistence.
 */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort()
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
