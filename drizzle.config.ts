import { defineConfig } from 'drizzle-kit'

// Migrations are generated from the schema and committed; the service applies them at
// start-up on both engines (db/migrate.ts), so drizzle-kit never touches a live database.
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema/index.ts',
  out: './db/migrations',
})
