import { t, type Static } from 'elysia'
import { Value } from '@sinclair/typebox/value'

const Environment = t.Object({
  PORT: t.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  DATABASE_URL: t.Optional(t.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: t.String({ minLength: 1, default: './data' }),
  ADMIN_TOKEN: t.Optional(t.String({ minLength: 16 })),
})

export interface Config {
  port: number
  databaseUrl: string | undefined
  dataDir: string
  adminToken: string
  /** True when no ADMIN_TOKEN was given and one was generated for this process. */
  adminTokenGenerated: boolean
}

/**
 * Reads the environment once, at start-up. Everything below receives the parsed Config;
 * nothing else reads process.env. Error messages name the variable, never its value
 * (DATABASE_URL and ADMIN_TOKEN are secrets).
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {}
  for (const name of Object.keys(Environment.properties)) {
    const value = env[name]
    if (value !== undefined && value !== '') raw[name] = value
  }
  const parsed = Value.Default(Environment, Value.Convert(Environment, raw))
  if (!Value.Check(Environment, parsed)) {
    const problems = [...Value.Errors(Environment, parsed)].map(
      (e) => `${e.path.slice(1) || 'environment'}: ${e.message}`,
    )
    throw new Error(`invalid configuration: ${problems.join('; ')}`)
  }
  const env_ = parsed as Static<typeof Environment>
  const adminToken = env_.ADMIN_TOKEN ?? generateAdminToken()
  return {
    port: env_.PORT,
    databaseUrl: env_.DATABASE_URL,
    dataDir: env_.DATA_DIR,
    adminToken,
    adminTokenGenerated: env_.ADMIN_TOKEN === undefined,
  }
}

function generateAdminToken(): string {
  return 'adm_' + Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url')
}
