import type { Db } from '../../db/client.ts'

/**
 * A Drizzle handle over the real database whose query answers are held back until
 * `release()`: each query runs and reads its rows at once, then waits. It lets a test
 * stand exactly between "the row was read" and "the reader got it" (a cache fill racing
 * a change). `read` resolves when the first held query has its rows.
 */
export function holdReads(db: Db) {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  let readDone!: () => void
  const read = new Promise<void>((resolve) => (readDone = resolve))

  function hold<T extends object>(target: T): T {
    return new Proxy(target, {
      get(object, property) {
        const value = Reflect.get(object, property, object) as unknown
        if (typeof value !== 'function') return value
        if (property === 'then') {
          const then = value as (onRows: (rows: unknown) => unknown) => Promise<unknown>
          return (resolve: (v: unknown) => unknown, reject: (e: unknown) => unknown) =>
            then
              .call(object, async (rows: unknown) => {
                readDone()
                await gate
                return rows
              })
              .then(resolve, reject)
        }
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(object, args)
          return result !== null && typeof result === 'object' ? hold(result) : result
        }
      },
    })
  }

  return { db: hold(db), read, release }
}
