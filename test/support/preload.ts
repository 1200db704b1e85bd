import { afterAll, afterEach, beforeEach } from 'bun:test'
import { flushBackgroundWrites, stopBackgroundWriters } from './background.ts'
import { emptyAllTables, openedTestDatabase, openedTestEventsDatabase, testDatabase, testEventsDatabase } from './database.ts'

// Every test starts on empty tables. On PGlite only what a file's tests opened is
// emptied (unit tests never open it); a PostgreSQL database may hold rows of an earlier
// run, so it is opened and emptied before the test, never after a service it starts wrote.
beforeEach(async () => {
  const opened = process.env.DATABASE_URL ? testDatabase() : openedTestDatabase()
  if (opened) await emptyAllTables(await opened)
  // The event store's own database, when EVENTS_DATABASE_URL gives it one.
  const events = process.env.EVENTS_DATABASE_URL ? testEventsDatabase() : openedTestEventsDatabase()
  if (events) await emptyAllTables(await events)
})

afterEach(async () => {
  // A test that closed its database (or broke it on purpose) has nothing left to write.
  await flushBackgroundWrites().catch(() => {})
})

// The database stays open for the worker's next file (the suite runs without isolation,
// package.json): opening PGlite costs about 2 s a file. Only this file's services stop.
afterAll(async () => {
  await stopBackgroundWriters()
})
