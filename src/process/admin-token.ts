import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** The file in DATA_DIR that keeps a generated admin token across starts. */
export const ADMIN_TOKEN_FILE = 'admin-token'

/**
 * Where the token in effect came from: `environment` (ADMIN_TOKEN), `kept` (the file in
 * DATA_DIR, generated on an earlier start) or `generated` (on this start, into that file).
 */
export type AdminTokenSource = 'environment' | 'kept' | 'generated'

export interface AdminToken {
  token: string
  source: AdminTokenSource
  /**
   * The token file in DATA_DIR: where a kept or generated token is; with ADMIN_TOKEN set,
   * a file left by an earlier start, which is ignored. Undefined when there is none.
   */
  file: string | undefined
}

/**
 * ADMIN_TOKEN when set; otherwise on the embedded engine the token kept in DATA_DIR
 * (created with mode 0600 on the first start). With DATABASE_URL several instances must
 * share one token, so a missing ADMIN_TOKEN refuses to start (docs/api.md, "Operators").
 */
export function resolveAdminToken(options: {
  adminToken: string | undefined
  databaseUrl: string | undefined
  dataDir: string
}): AdminToken {
  if (options.adminToken !== undefined) {
    const file = options.databaseUrl === undefined ? join(options.dataDir, ADMIN_TOKEN_FILE) : undefined
    return { token: options.adminToken, source: 'environment', file: file !== undefined && existsSync(file) ? file : undefined }
  }
  if (options.databaseUrl !== undefined) {
    throw new Error(
      'ADMIN_TOKEN is required with DATABASE_URL: instances sharing a database must share one operator token (set ADMIN_TOKEN to 16 or more characters)',
    )
  }
  mkdirSync(options.dataDir, { recursive: true })
  const file = join(options.dataDir, ADMIN_TOKEN_FILE)
  const kept = readKept(file)
  if (kept !== undefined) return { token: kept, source: 'kept', file }
  const token = 'adm_' + Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url')
  // 'wx' with mode 0600: never readable by others, never overwrites a token kept already.
  const fd = openSync(file, 'wx', 0o600)
  writeSync(fd, `${token}\n`)
  closeSync(fd)
  return { token, source: 'generated', file }
}

/**
 * The line every start logs about the token in effect. It holds the token itself only on
 * the start that generated it, one of the two secrets a log line may hold (README, "Logs").
 */
export function adminTokenLine(adminToken: AdminToken): string {
  switch (adminToken.source) {
    case 'environment':
      return adminToken.file === undefined
        ? 'admin token: ADMIN_TOKEN from the environment'
        : `admin token: ADMIN_TOKEN from the environment; the token kept in ${adminToken.file} is ignored while ADMIN_TOKEN is set`
    case 'kept':
      return `admin token: the one kept in ${adminToken.file} since the first start (set ADMIN_TOKEN to use another)`
    case 'generated':
      return `admin token: generated on this start and kept in ${adminToken.file} (printed this once; set ADMIN_TOKEN to choose one): ${adminToken.token}`
  }
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
