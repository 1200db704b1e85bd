// Waits for the PostgreSQL server of a URL and gives CI a fresh, empty database there (and
// drops the parallel test workers' databases named after it):
//   bun .ci/prepare-database.ts postgres://postgres@127.0.0.1:5432/test
// The CI database is scratch: recreating it keeps a schema left by an earlier run (from
// migrations since squashed) out of this one. Needs CREATEDB; without it, the existing
// database is used as it is.
import postgres from 'postgres'

const url = process.argv[2]
if (!url) throw new Error('usage: bun .ci/prepare-database.ts <postgres url>')
const target = new URL(url)
const name = decodeURIComponent(target.pathname.slice(1))
if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`unexpected database name "${name}"`)
const maintenance = new URL(url)
maintenance.pathname = '/postgres'
const where = `${target.hostname}:${target.port || 5432}`

const sql = postgres(maintenance.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 })
try {
  const deadline = Date.now() + 60_000
  for (;;) {
    try {
      await sql`select 1`
      break
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`PostgreSQL at ${where} does not answer: ${String(error)}`)
      await Bun.sleep(1_000)
    }
  }
  try {
    await sql.unsafe(`drop database if exists "${name}" with (force)`)
    await sql.unsafe(`create database "${name}"`)
    // The test workers' own databases beside it (test/support/database.ts) go too.
    const workers = await sql<{ datname: string }[]>`select datname from pg_database where datname like ${`${name}\\_worker%`}`
    for (const { datname } of workers) await sql.unsafe(`drop database if exists "${datname}" with (force)`)
    console.log(`database ${name} on ${where}: recreated empty, with ${workers.length} worker databases dropped`)
  } catch (error) {
    const [exists] = await sql`select 1 as found from pg_database where datname = ${name}`
    if (!exists) throw error
    console.log(`database ${name} on ${where}: could not recreate it (${String(error)}); using it as it is`)
  }
} finally {
  await sql.end({ timeout: 5 })
}
