/**
 * Hands values back at the end of the event loop's turn, all of the turn's together: one
 * setImmediate releases every value waiting since the first. The list holds at most the
 * requests Bun's server hands over in one turn, and is emptied each turn.
 *
 * Why the hot routes answer this way (src/http/direct-route.ts): under load, Bun reads every
 * request that arrived before a turn, and answers written together at its end cost the
 * server less than answers written one by one as each request is handled (the kernel
 * wakes the client once per burst instead of once per answer). Under wrk, whoami answered
 * so cost 1.4-5.3 µs less CPU per request than answered at once, in four runs against the
 * tree before (bench/README.md, "whoami answered at the turn's end"). A request alone
 * waits only for the rest of its own turn.
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
