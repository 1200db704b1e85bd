/**
 * Resolves at the end of the event loop's turn, all of the turn's waiters together: one
 * setImmediate releases every promise made since the first. Under load Bun reads every
 * request that arrived before a turn; answers written together at its end cost the server
 * less than answers written one by one (bench/README.md, "The turn's end"). A request
 * alone waits only for the rest of its own turn. The list is emptied each turn.
 */
export function createTurnEnd(): () => Promise<void> {
  let waiting: (() => void)[] = []
  const release = () => {
    const released = waiting
    waiting = []
    for (const resolve of released) resolve()
  }
  return () =>
    new Promise<void>((resolve) => {
      if (waiting.length === 0) setImmediate(release)
      waiting.push(resolve)
    })
}
