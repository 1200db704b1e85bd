import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** The file in DATA_DIR that keeps a generated admin token across starts. */
export const ADMIN_TOKEN_FILE = 'admin-token'

export interface AdminToken {
  token: string
  /** Where a generated token is kept; undefined when ADMIN_TOKEN was set. */
  file: string | undefined
  /** True only on the start that generated it: the one time the log prints it. */
  created: boolean
}

/**
 * ADMIN_TOKEN when set; otherwise on the embedded engine the token kept in DATA_DIR
 * (created with mode 0600 on the first start). With DATABASE_URL several instances must
 * share one token, so a missing ADMIN_TOKEN refuses to start (contract section 1).
 */
export function resolveAdminToken(options: {
  adminToken: string | undefined
  databaseUrl: string | undefined
  dataDir: string
}): AdminToken {
  if (options.adminToken !== undefined) return { token: options.adminToken, file: undefined, created: false }
  if (options.databaseUrl !== undefined) {
    throw new Error(
      'ADMIN_TOKEN is required with DATABASE_URL: instances sharing a database must share one operator token (set ADMIN_TOKEN to 16 or more characters)',
    )
  }
  mkdirSync(options.dataDir, { recursive: true })
  const file = join(options.dataDir, ADMIN_TOKEN_FILE)
  const kept = readKept(file)
  if (kept !== undefined) return { token: kept, file, created: false }
  const token = 'adm_' + Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url')
  // 'wx' with mode 0600: never readable by others, never overwrites a token kept already.
  const fd = openSync(file, 'wx', 0o600)
  writeSync(fd, `${token}\n`)
  closeSync(fd)
  return { token, file, created: true }
}

function readKept(file: string): string | undefined {
  try {
    const token = readFileSync(file, 'utf8').trim()
    if (token.length < 16) throw new Error(`${file} holds no admin token of 16 or more characters; remove it to generate one`)
    return token
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}
