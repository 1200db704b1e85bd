import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { eventStoreMigrations, serviceMigrations } from '../../db/migrations.ts'

test.each([
  ['the service', serviceMigrations],
  ['the event store', eventStoreMigrations],
])('every migration drizzle-kit wrote for %s is embedded in the build', (_, set) => {
  const onDisk = readdirSync(new URL(`../../${set.folder}`, import.meta.url))
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.replace(/\.sql$/, ''))
    .sort()
  expect(onDisk.length).toBeGreaterThan(0)
  expect(Object.keys(set.sources).sort()).toEqual(onDisk)
  expect(set.journal.entries.map((e) => e.tag).sort()).toEqual(onDisk)
})
