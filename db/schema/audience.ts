import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { businesses } from './core.ts'

/**
 * People of a business's audience. Within a business, `externalId` (the customer's own
 * user id) and `email` (case-insensitively) each identify at most one person: upserts
 * match on them (src/areas/audience/upsert.ts) and the unique indexes settle races between
 * concurrent upserts. The email is stored as sent; matching uses lower(email).
 * Times that page cursors carry (created_at, added_at) have millisecond precision, so that
 * they round-trip exactly through a JavaScript Date.
 */
export const people = pgTable(
  'people',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    externalId: text('external_id'),
    email: text('email'),
    firstName: text('first_name'),
    lastName: text('last_name'),
    properties: jsonb('properties').$type<Record<string, unknown>>().notNull().default(sql`'{}'::jsonb`),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('people_business_external_id_idx').on(table.businessId, table.externalId),
    uniqueIndex('people_business_email_idx').on(table.businessId, sql`lower(${table.email})`),
    index('people_business_created_idx').on(table.businessId, table.createdAt.desc(), table.id.desc()),
  ],
)

/** Companies, matched like people: on `externalId`, else on `domain` (stored lower-cased). */
export const companies = pgTable(
  'companies',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    externalId: text('external_id'),
    domain: text('domain'),
    name: text('name'),
    properties: jsonb('properties').$type<Record<string, unknown>>().notNull().default(sql`'{}'::jsonb`),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('companies_business_external_id_idx').on(table.businessId, table.externalId),
    uniqueIndex('companies_business_domain_idx').on(table.businessId, sql`lower(${table.domain})`),
    index('companies_business_created_idx').on(table.businessId, table.createdAt.desc(), table.id.desc()),
  ],
)

/** Named lists of people, addressed by a per-business slug. */
export const audienceLists = pgTable(
  'audience_lists',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    businessId: uuid('business_id')
      .notNull()
      .references(() => businesses.id),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('audience_lists_business_slug_idx').on(table.businessId, table.slug),
    index('audience_lists_business_created_idx').on(table.businessId, table.createdAt.desc(), table.id.desc()),
  ],
)

/**
 * Memberships: one row per (list, person), so adding twice keeps one. Deleting a person
 * or a list removes its memberships (ON DELETE CASCADE).
 */
export const audienceListMembers = pgTable(
  'audience_list_members',
  {
    listId: uuid('list_id')
      .notNull()
      .references(() => audienceLists.id, { onDelete: 'cascade' }),
    personId: uuid('person_id')
      .notNull()
      .references(() => people.id, { onDelete: 'cascade' }),
    addedAt: timestamp('added_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    primaryKey({ columns: [table.listId, table.personId] }),
    index('audience_list_members_list_added_idx').on(table.listId, table.addedAt.desc(), table.personId.desc()),
    index('audience_list_members_person_idx').on(table.personId),
  ],
)
