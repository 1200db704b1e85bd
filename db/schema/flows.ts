import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { businesses } from './core.ts'

/** Flows are defined by operators (admin API) and triggered through /api/v0/flow/:id/trigger. */
export const flows = pgTable(
  'flows',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    name: text('name').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [index('flows_business_idx').on(table.businessId)],
)
