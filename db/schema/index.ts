// Every table of the service, one file per area; drizzle-kit reads this entry point.
export * from './core.ts'
export * from './flows.ts'
export * from './dashboard.ts'
export * from './analytics.ts'
export * from './audience.ts'
export * from './blog.ts'
export * from './memory.ts'
