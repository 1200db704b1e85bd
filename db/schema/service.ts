// The service's own tables: everything but the event store (./event-store.ts), which may
// live on a database of its own. drizzle.config.ts reads this entry point.
export * from './core.ts'
export * from './flows.ts'
export * from './dashboard.ts'
export * from './audience.ts'
export * from './blog.ts'
export * from './memory.ts'
export * from './audit.ts'
export * from './usage.ts'
export * from './webhooks.ts'
