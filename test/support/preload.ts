import { afterAll, afterEach, beforeEach } from 'bun:test'
import { closeTestDatabase, emptyAllTables, testDatabase } from './database.ts'
import { flushBackgroundWrites } from './service.ts'

beforeEach(async () => {
  await emptyAllTables(await testDatabase())
})

afterEach(async () => {
  // A test that closed its database (or broke it on purpose) has nothing left to write.
  await flushBackgroundWrites().catch(() => {})
})

afterAll(async () => {
  await closeTestDatabase()
})
