/** One request written byte for byte on a fresh connection; the raw answer. */
export async function raw(port: number, request: string | Uint8Array): Promise<string> {
  let answer = ''
  const { promise, resolve } = Promise.withResolvers<string>()
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data(_socket, data) {
        answer += data.toString('latin1')
      },
      close: () => resolve(answer),
      error: () => resolve(answer),
    },
  })
  socket.write(request)
  setTimeout(() => {
    socket.end()
    resolve(answer)
  }, 2_000)
  return promise
}

/** The status of a raw HTTP/1.1 answer; 0 when there was none. */
export function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)
}
