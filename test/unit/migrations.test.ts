import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { migrationJournal, migrationSources } from '../../db/migrations.ts'

test('every migration drizzle-kit wrote is embedded in the build', () => {
  const onDisk = readdirSync(new URL('../../db/migrations', import.meta.url))
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.replace(/\.sql$/, ''))
    .sort()
  expect(Object.keys(migrationSources).sort()).toEqual(onDisk)
  expect(migrationJournal.entries.map((e) => e.tag).sort()).toEqual(onDisk)
})
