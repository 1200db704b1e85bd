/**
 * Hands values back at the end of the event loop's turn, all of the turn's together: one
 * setImmediate releases every value waiting since the first. The list holds at most the
 * requests Bun's server hands over in one turn, and is emptied each turn.
 *
 * Why the hot routes answer this way (src/http/direct-route.ts): under load, Bun reads every
 * request that arrived before a turn, and answers written together at its end cost the
 * server less than answers written one by one as each request is handled. On loopback with
 * wrk, whoami went from 29.2k to 35.9k req/s and from 32.2 to 26.9 µs of CPU per request,
 * mostly kernel time spent waking the client once per answer (bench/README.md, "whoami
 * answered at the turn's end"). A request alone waits only for the rest of its own turn.
 */
export function createTurnEnd(): <T>(value: T) => Promise<T> {
  let waiting: (() => void)[] = []
  const release = () => {
    const released = waiting
    waiting = []
    for (const resolve of released) resolve()
  }
  return <T>(value: T) =>
    new Promise<T>((resolve) => {
      if (waiting.length === 0) setImmediate(release)
      waiting.push(() => resolve(value))
    })
}
