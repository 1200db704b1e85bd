import journal from './migrations/meta/_journal.json'
import m0000 from './migrations/0000_init.sql' with { type: 'text' }
import m0001 from './migrations/0001_keys_rate_limit_and_notify.sql' with { type: 'text' }
import m0002 from './migrations/0002_key_roll_audit_usage_identity.sql' with { type: 'text' }
import m0003 from './migrations/0003_analytics_events_fewer_indexes.sql' with { type: 'text' }
import m0004 from './migrations/0004_analytics_events_unique_id.sql' with { type: 'text' }
import m0005 from './migrations/0005_key_allowed_ips.sql' with { type: 'text' }
import m0006 from './migrations/0006_accounts_and_memberships.sql' with { type: 'text' }
import m0007 from './migrations/0007_usage_refusals_bounded.sql' with { type: 'text' }
import m0008 from './migrations/0008_event_retention_and_erasures.sql' with { type: 'text' }
import m0009 from './migrations/0009_analytics_events_partitioned.sql' with { type: 'text' }
import m0010 from './migrations/0010_business_events_expired_before.sql' with { type: 'text' }
import m0011 from './migrations/0011_accounts_are_their_persons.sql' with { type: 'text' }
import m0012 from './migrations/0012_erasures_done_index.sql' with { type: 'text' }
import m0013 from './migrations/0013_audit_member_joined.sql' with { type: 'text' }
import m0014 from './migrations/0014_key_leaks_and_webhook_events.sql' with { type: 'text' }
import m0015 from './migrations/0015_webhook_endpoints_and_deliveries.sql' with { type: 'text' }
import m0016 from './migrations/0016_event_store_keys_hold_the_business.sql' with { type: 'text' }
import m0017 from './migrations/0017_event_store_migrates_apart.sql' with { type: 'text' }
import eventStoreJournal from './migrations-events/meta/_journal.json'
import e0000 from './migrations-events/0000_event_store.sql' with { type: 'text' }

/** One set of migrations: drizzle-kit's journal, the files, and the table recording which ran. */
export interface MigrationSet {
  /** The folder drizzle-kit writes to. */
  folder: string
  journal: { entries: { tag: string; when: number; breakpoints: boolean }[] }
  sources: Record<string, string>
  /** In the `drizzle` schema of the database it is applied to. */
  table: string
}

// Every committed migration, imported statically so that `bun build --compile` embeds
// them in the executable. drizzle-kit writes a new file and a journal entry; add its import
// here (test/unit/migrations.test.ts fails until the lists agree).

/** The service's own tables (drizzle.config.ts): on DATABASE_URL's database. */
export const serviceMigrations: MigrationSet = {
  folder: 'db/migrations',
  journal,
  table: '__drizzle_migrations',
  sources: {
    '0000_init': m0000,
    '0001_keys_rate_limit_and_notify': m0001,
    '0002_key_roll_audit_usage_identity': m0002,
    '0003_analytics_events_fewer_indexes': m0003,
    '0004_analytics_events_unique_id': m0004,
    '0005_key_allowed_ips': m0005,
    '0006_accounts_and_memberships': m0006,
    '0007_usage_refusals_bounded': m0007,
    '0008_event_retention_and_erasures': m0008,
    '0009_analytics_events_partitioned': m0009,
    '0010_business_events_expired_before': m0010,
    '0011_accounts_are_their_persons': m0011,
    '0012_erasures_done_index': m0012,
    '0013_audit_member_joined': m0013,
    '0014_key_leaks_and_webhook_events': m0014,
    '0015_webhook_endpoints_and_deliveries': m0015,
    '0016_event_store_keys_hold_the_business': m0016,
    '0017_event_store_migrates_apart': m0017,
  },
}

/**
 * The event store (drizzle.events.config.ts): on EVENTS_DATABASE_URL's database when it is
 * set, else applied after the service's, beside them (docs/scaling.md, "A database for events").
 */
export const eventStoreMigrations: MigrationSet = {
  folder: 'db/migrations-events',
  journal: eventStoreJournal,
  table: '__drizzle_migrations_events',
  sources: { '0000_event_store': e0000 },
}
