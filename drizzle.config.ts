import { defineConfig } from 'drizzle-kit'

// Migrations are generated from the schema and committed; the service applies them at
// start-up on both engines (db/migrate.ts), so drizzle-kit never touches a live database.
// Two sets: this one for the service's own tables, drizzle.events.config.ts's for the event
// store, which may live on a database of its own (EVENTS_DATABASE_URL; docs/scaling.md).
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema/service.ts',
  out: './db/migrations',
})
