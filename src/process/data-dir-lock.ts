import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** The file in DATA_DIR that names the process owning the embedded database. */
export const LOCK_FILE = 'keygate.lock'

/** Directories this run of the process holds (a restart by bun --watch starts with none). */
const held = new Set<string>()

/** Thrown when another live process owns the directory; the message names it. */
export class DataDirTaken extends Error {}

/**
 * Makes this process the only owner of `dataDir`: two PGlite copies
 * of one directory lose data. The lock file is created with O_EXCL, so of two processes
 * starting together exactly one wins. A lock left by a dead process is replaced by a
 * rename (atomic), after checking that its pid is gone; so is one left by this very
 * process before `bun --watch` restarted it in place (same pid, nothing of the old run
 * left in memory). Returns the release function.
 */
export function lockDataDir(dataDir: string): () => void {
  if (held.has(dataDir)) throw new DataDirTaken(`DATA_DIR ${dataDir} is already open in this process`)
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, LOCK_FILE)
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644)
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
      held.add(dataDir)
      return function release() {
        held.delete(dataDir)
        if (ownerOf(path) === process.pid) rmSync(path, { force: true })
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const owner = ownerOf(path)
    if (owner !== undefined && isAlive(owner)) {
      throw new DataDirTaken(
        `DATA_DIR ${dataDir} is in use by process ${owner} (${path}); one process owns a data directory, stop it first or choose another DATA_DIR`,
      )
    }
    // Stale (dead pid or unreadable): move it aside atomically, then race for O_EXCL again,
    // so two processes taking over the same stale lock still end with one owner.
    try {
      renameSync(path, `${path}.stale-${process.pid}`)
      rmSync(`${path}.stale-${process.pid}`, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  throw new DataDirTaken(`DATA_DIR ${dataDir}: could not take ${path}; another process keeps replacing it`)
}

function ownerOf(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

function isAlive(pid: number): boolean {
  // Our own pid, for a directory this run does not hold: the run before a bun --watch restart.
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
