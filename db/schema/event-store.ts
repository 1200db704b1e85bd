// The event store's tables (events, their id claims, erasure requests): on
// EVENTS_DATABASE_URL's database when it is set (docs/scaling.md). drizzle.events.config.ts
// reads this entry point.
export * from './analytics.ts'
export * from './erasures.ts'
