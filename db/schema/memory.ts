import { sql } from 'drizzle-orm'
import { customType, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { businesses } from './core.ts'

const tsvector = customType<{ data: string }>({
  dataType: () => 'tsvector',
})

/**
 * Memory documents, searched with PostgreSQL text search (the same on PGlite). `search`
 * is computed by the database from title (weight A) and content (weight B) with the
 * `english` configuration, and indexed with GIN; queries use websearch_to_tsquery.
 */
export const memoryDocuments = pgTable(
  'memory_documents',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    title: text('title'),
    content: text('content').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    search: tsvector('search')
      .notNull()
      .generatedAlwaysAs(
        sql`setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || setweight(to_tsvector('english'::regconfig, content), 'B')`,
      ),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    index('memory_documents_business_order_idx').on(table.businessId, table.createdAt.desc(), table.id.desc()),
    index('memory_documents_search_idx').using('gin', table.search),
  ],
)
