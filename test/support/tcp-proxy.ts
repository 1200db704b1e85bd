import type { Socket } from 'bun'

/**
 * A TCP proxy on loopback that a test steers, standing between the service and PostgreSQL
 * (or anything else):
 * - `pass`: bytes flow both ways;
 * - `down`: every open connection is closed and new ones are closed at once, as when the
 *   server is stopped;
 * - `hang`: connections are accepted and kept, but no byte moves either way (held, not
 *   dropped), as when the server or the path to it stops answering; back to `pass`, the
 *   held bytes flow again.
 */
export type ProxyMode = 'pass' | 'down' | 'hang'

interface Side {
  socket: Socket<Link> | null
  /** Bytes waiting for this side: not connected yet, held, or not taken by the kernel. */
  waiting: Buffer[]
}

interface Link {
  client: Side
  server: Side
}

export interface TcpProxy {
  readonly port: number
  readonly url: (databaseUrl: string) => string
  set(mode: ProxyMode): void
  stop(): void
}

export function startTcpProxy(target: { hostname: string; port: number }): TcpProxy {
  let mode: ProxyMode = 'pass'
  const links = new Set<Link>()

  function flush(side: Side): void {
    if (mode !== 'pass' || !side.socket) return
    while (side.waiting.length > 0) {
      const chunk = side.waiting[0]!
      const written = side.socket.write(chunk)
      if (written < chunk.length) {
        side.waiting[0] = chunk.subarray(Math.max(written, 0))
        return // the drain handler continues
      }
      side.waiting.shift()
    }
  }

  function send(side: Side, data: Buffer): void {
    side.waiting.push(Buffer.from(data))
    flush(side)
  }

  function close(link: Link): void {
    links.delete(link)
    link.client.socket?.end()
    link.server.socket?.end()
  }

  const listener = Bun.listen<Link>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        if (mode === 'down') {
          client.end()
          return
        }
        const link: Link = { client: { socket: client, waiting: [] }, server: { socket: null, waiting: [] } }
        client.data = link
        links.add(link)
        Bun.connect<Link>({
          hostname: target.hostname,
          port: target.port,
          data: link,
          socket: {
            open(server) {
              link.server.socket = server
              flush(link.server)
            },
            data(_server, data) {
              send(link.client, data)
            },
            drain() {
              flush(link.server)
            },
            close() {
              close(link)
            },
            error() {
              close(link)
            },
          },
        }).catch(() => close(link))
      },
      data(client, data) {
        send(client.data.server, data)
      },
      drain(client) {
        flush(client.data.client)
      },
      close(client) {
        if (client.data) close(client.data)
      },
      error(client) {
        if (client.data) close(client.data)
      },
    },
  })

  return {
    port: listener.port,
    /** The same URL with host and port replaced by this proxy's. */
    url(databaseUrl) {
      const url = new URL(databaseUrl)
      url.hostname = '127.0.0.1'
      url.port = String(listener.port)
      return url.toString()
    },
    set(next) {
      mode = next
      if (next === 'down') for (const link of [...links]) close(link)
      if (next === 'pass') {
        for (const link of links) {
          flush(link.server)
          flush(link.client)
        }
      }
    },
    stop() {
      for (const link of [...links]) close(link)
      listener.stop(true)
    },
  }
}
