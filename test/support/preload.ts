import { afterAll, afterEach, beforeEach } from 'bun:test'
import { flushBackgroundWrites } from './background.ts'
import { closeTestDatabase, emptyAllTables, openedTestDatabase } from './database.ts'

// Only what a file's tests opened is emptied: unit tests never open the database.
beforeEach(async () => {
  const opened = openedTestDatabase()
  if (opened) await emptyAllTables(await opened)
})

afterEach(async () => {
  // A test that closed its database (or broke it on purpose) has nothing left to write.
  await flushBackgroundWrites().catch(() => {})
})

afterAll(async () => {
  await closeTestDatabase()
})
