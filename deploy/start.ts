import { join } from 'node:path'

// deploy/up.sh driven from TypeScript: the deployment test (test/deploy/haproxy.test.ts) and
// the capacity load test (bench/capacity.ts) start the same deployment through this one.

export interface Deployment {
  /** HAProxy's address. */
  proxy: string
  instances: { url: string; pid: number }[]
  /** The script's process (its children: the instances, HAProxy, Redis). */
  script: Bun.Subprocess
  /** What the script printed so far. */
  output(): string
  /** SIGTERM to the script, whose EXIT trap stops what it started; resolves once it has. */
  stop(): Promise<void>
}

export interface DeploymentOptions {
  instances: number
  /** The PostgreSQL server (`postgres://user@host:port`, no database). */
  pgUrl: string
  database: string
  adminToken: string
  /** Longest wait for the script to say it is up. */
  timeoutMs: number
}

/** Runs deploy/up.sh and resolves once it says everything answers; rejects (having stopped it) otherwise. */
export async function startDeployment(options: DeploymentOptions): Promise<Deployment> {
  const script = Bun.spawn(['bash', join(import.meta.dir, 'up.sh'), String(options.instances)], {
    env: { PATH: process.env.PATH ?? '', PGURL: options.pgUrl, DB: options.database, ADMIN_TOKEN: options.adminToken },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let output = ''
  const decoder = new TextDecoder()
  for (const stream of [script.stdout, script.stderr]) {
    void (async () => {
      for await (const chunk of stream) output += decoder.decode(chunk)
    })()
  }
  const stop = async () => {
    script.kill('SIGTERM')
    await script.exited
  }
  const deadline = Date.now() + options.timeoutMs
  while (!output.includes('Ctrl-C stops everything.')) {
    if (script.exitCode !== null || Date.now() > deadline) {
      await stop()
      // Never the admin token in an error a log may keep.
      throw new Error(`deploy/up.sh did not come up: ${output.replaceAll(options.adminToken, '<admin token>')}`)
    }
    await Bun.sleep(50)
  }
  return {
    proxy: /^proxy\s+(http:\S+)/m.exec(output)![1]!,
    instances: [...output.matchAll(/^instance\d+\s+(http:\S+)\s+\(pid (\d+)/gm)].map((m) => ({ url: m[1]!, pid: Number(m[2]) })),
    script,
    output: () => output,
    stop,
  }
}
