import { defineConfig } from 'drizzle-kit'

// The event store's migrations (events, their id claims, erasure requests): applied to
// EVENTS_DATABASE_URL's database when it is set, else beside the service's own tables
// (db/migrate.ts). `npx drizzle-kit generate --config drizzle.events.config.ts`.
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema/event-store.ts',
  out: './db/migrations-events',
})
