import { afterAll, beforeEach } from 'bun:test'
import { closeTestDatabase, emptyAllTables, testDatabase } from './database.ts'

beforeEach(async () => {
  await emptyAllTables(await testDatabase())
})

afterAll(async () => {
  await closeTestDatabase()
})
