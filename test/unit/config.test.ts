import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config.ts'

// EVENTS_DATABASE_URL (docs/scaling.md, "A database for events"): read at start-up, refused
// with a message naming the variable and never its value (it holds a password).
const SECRET = 's3cret-password'

test('EVENTS_DATABASE_URL with DATABASE_URL puts the events apart; unset, they live beside everything else', () => {
  const apart = loadConfig({ DATABASE_URL: 'postgres://u@main/keygate', EVENTS_DATABASE_URL: 'postgresql://u@events/keygate_events' })
  expect([apart.databaseUrl, apart.eventsDatabaseUrl]).toEqual(['postgres://u@main/keygate', 'postgresql://u@events/keygate_events'])
  expect(loadConfig({ DATABASE_URL: 'postgres://u@main/keygate' }).eventsDatabaseUrl).toBeUndefined()
  expect(loadConfig({ DATABASE_URL: 'postgres://u@main/keygate', EVENTS_DATABASE_URL: '' }).eventsDatabaseUrl).toBeUndefined()
})

test.each([
  [
    'without DATABASE_URL (the embedded database stays one)',
    { EVENTS_DATABASE_URL: `postgres://u:${SECRET}@events/e` },
    'EVENTS_DATABASE_URL needs DATABASE_URL',
  ],
  [
    'not a PostgreSQL URL',
    { DATABASE_URL: 'postgres://u@main/k', EVENTS_DATABASE_URL: `mysql://u:${SECRET}@events/e` },
    'EVENTS_DATABASE_URL',
  ],
])('EVENTS_DATABASE_URL %s: start-up refused, naming the variable, never its value', (_, env, words) => {
  let message = ''
  try {
    loadConfig(env)
  } catch (error) {
    message = (error as Error).message
  }
  expect(message).toContain(words)
  expect(message).not.toContain(SECRET)
})
